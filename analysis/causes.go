package analysis

import (
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// causedBy puts a plane's own findings that name frontends in the place of
// the behaviour differences of those frontends: such a finding is their
// cause (an IPVS virtual address bound on no interface makes every path to
// it differ), and an operator needs the cause, once. A finding it replaces
// lends it its Service when the check could not name one. Frontends are
// matched by address, port and protocol, since the plane may not tell an
// external address from a cluster one.
func causedBy(findings, checks []behavior.Finding) ([]behavior.Finding, []behavior.Finding) {
	cause := map[string]int{}
	for i, c := range checks {
		for _, f := range c.Frontends {
			cause[frontendAddr(f)] = i
		}
	}
	if len(cause) == 0 {
		return findings, checks
	}
	out := findings[:0:0]
	for _, f := range findings {
		i, ok := -1, len(f.Frontends) > 0
		for _, fe := range f.Frontends {
			j, has := cause[frontendAddr(fe)]
			if !has || i >= 0 && j != i {
				ok = false
				break
			}
			i = j
		}
		if !ok {
			out = append(out, f)
			continue
		}
		if checks[i].Service == "" {
			checks[i].Service = f.Service
		}
	}
	return out, checks
}

// frontendAddr is a frontend's address, port and protocol, without its
// kind ("ClusterIP 10.96.0.10:80/TCP" → "10.96.0.10:80/TCP").
func frontendAddr(s string) string {
	_, addr, _ := strings.Cut(s, " ")
	return addr
}
