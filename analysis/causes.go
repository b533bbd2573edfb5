package analysis

import (
	"slices"
	"strings"

	"github.com/svctrace/svctrace/behavior"
)

// causedBy puts a plane's own findings that name frontends in the place of
// the behaviour differences of those frontends: such a finding is their
// cause (an IPVS virtual address bound on no interface makes every path to
// it differ), and an operator needs the cause, once. causes are findings
// a plane can tell only as causes (dataplane.Causer): each is kept only
// where it stands for some difference. See replace for the matching.
func causedBy(findings, checks, causes []behavior.Finding) ([]behavior.Finding, []behavior.Finding) {
	findings, _ = replace(findings, checks)
	findings, used := replace(findings, causes)
	for i, c := range causes {
		if used[i] {
			checks = append(checks, c)
		}
	}
	return findings, checks
}

// replace drops the findings a cause stands for: those whose frontends
// are all the cause's (matched by address, port and protocol, since a
// plane may not tell an external address from a cluster one) and, when
// the cause names an endpoint, about that endpoint. A cause that replaces
// a finding lends it the finding's Service when it could not name one;
// used tells which causes replaced some.
func replace(findings, causes []behavior.Finding) ([]behavior.Finding, []bool) {
	used := make([]bool, len(causes))
	if len(causes) == 0 {
		return findings, used
	}
	out := findings[:0:0]
	for _, f := range findings {
		i := slices.IndexFunc(causes, func(c behavior.Finding) bool { return stands(c, f) })
		if i < 0 {
			out = append(out, f)
			continue
		}
		used[i] = true
		if causes[i].Service == "" {
			causes[i].Service = f.Service
		}
	}
	return out, used
}

// stands tells whether cause c stands for finding f.
func stands(c, f behavior.Finding) bool {
	if len(c.Frontends) == 0 || len(f.Frontends) == 0 || c.Endpoint != "" && c.Endpoint != f.Endpoint {
		return false
	}
	for _, fe := range f.Frontends {
		if !slices.ContainsFunc(c.Frontends, func(ce string) bool { return frontendAddr(ce) == frontendAddr(fe) }) {
			return false
		}
	}
	return true
}

// frontendAddr is a frontend's address, port and protocol, without its
// kind ("ClusterIP 10.96.0.10:80/TCP" → "10.96.0.10:80/TCP").
func frontendAddr(s string) string {
	_, addr, _ := strings.Cut(s, " ")
	return addr
}

// nameServices gives a plane's finding that names frontends but no
// Service the Service of the expected frontend at the first of them
// (the plane's rules may not name Services: ipvs).
func nameServices(fs []behavior.Finding, expected *behavior.Table) {
	if expected == nil {
		return
	}
	byAddr := map[string]string{}
	for _, f := range expected.Frontends {
		byAddr[frontendAddr(f.Key.String())] = f.Service
	}
	for i := range fs {
		if fs[i].Service == "" && len(fs[i].Frontends) > 0 {
			fs[i].Service = byAddr[frontendAddr(fs[i].Frontends[0])]
		}
	}
}
