//go:build linux

package e2e

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/test/lab"
)

// apiLoad is the API server's own count of the requests it served and
// the bytes it answered, by "VERB resource[/subresource]", from its
// /metrics (apiserver_request_total, apiserver_response_sizes_sum). The
// API server records the sizes of its answers to reads (GET, LIST) only:
// a review's answer (POST) is counted, not measured.
type apiLoad struct {
	Requests map[string]float64
	Bytes    map[string]float64
}

var metricLine = regexp.MustCompile(`^(apiserver_request_total|apiserver_response_sizes_sum)\{([^}]*)\} (\S+)$`)
var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiMetrics reads the API server's counters now.
func apiMetrics(t *testing.T, l *lab.Lab) apiLoad {
	t.Helper()
	out, err := l.Request(context.Background(), "GET", "/metrics", "", nil)
	if err != nil {
		t.Fatalf("the API server's /metrics: %v", err)
	}
	return parseAPILoad(string(out))
}

func parseAPILoad(text string) apiLoad {
	a := apiLoad{Requests: map[string]float64{}, Bytes: map[string]float64{}}
	for line := range strings.SplitSeq(text, "\n") {
		m := metricLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range metricLabel.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil || labels["resource"] == "" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if s := labels["subresource"]; s != "" {
			key += "/" + s
		}
		if m[1] == "apiserver_request_total" {
			a.Requests[key] += v
		} else {
			a.Bytes[key] += v
		}
	}
	return a
}

// minus is what was served between before and a.
func (a apiLoad) minus(before apiLoad) apiLoad {
	d := apiLoad{Requests: map[string]float64{}, Bytes: map[string]float64{}}
	for k, v := range a.Requests {
		if n := v - before.Requests[k]; n > 0 {
			d.Requests[k] = n
			d.Bytes[k] = a.Bytes[k] - before.Bytes[k]
		}
	}
	return d
}

// Whose requests they are: the agents send only their reviews of the
// CLI's token; the CLI only LISTs; the rest is the API server's own
// background work (its leases, its Service's endpoints) during the run.
const (
	byCLI    = "CLI (LIST)"
	byAgents = "agents (TokenReview, SubjectAccessReview)"
	byOthers = "the API server's own"
)

func whose(key string) string {
	switch {
	case strings.HasSuffix(key, " tokenreviews") || strings.HasSuffix(key, " subjectaccessreviews"):
		return byAgents
	case strings.HasPrefix(key, "LIST "):
		return byCLI
	}
	return byOthers
}

// split sums the requests and bytes of each party.
func (a apiLoad) split() map[string][2]float64 {
	out := map[string][2]float64{}
	for k, n := range a.Requests {
		s := out[whose(k)]
		s[0] += n
		s[1] += a.Bytes[k]
		out[whose(k)] = s
	}
	return out
}

// keys are a's request kinds, sorted.
func (a apiLoad) keys() []string { return slices.Sorted(maps.Keys(a.Requests)) }
