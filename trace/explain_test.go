package trace_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/analysis"
	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/snapshot"
	"github.com/svctrace/svctrace/trace"
)

func bareSnapshot(t *testing.T, text, table string) *snapshot.Snapshot {
	t.Helper()
	return &snapshot.Snapshot{APIVersion: snapshot.APIVersion, Kind: snapshot.Kind,
		Nodes: []snapshot.NodeState{{Name: "n1", Dumps: []snapshot.Dump{{Collector: "iptables-save", Family: "IPv4", Table: table, Text: text}}}}}
}

func explainBare(t *testing.T, text, ref string) *trace.ExplainReport {
	t.Helper()
	a, err := analysis.Analyze(bareSnapshot(t, text, ""), "n1", "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.ParseServiceRef(ref, "default")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := trace.Explain(a, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func backends(f behavior.Frontend, c behavior.SourceClass) map[string]string {
	out := map[string]string{}
	for _, b := range f.Outcomes[c].Backends {
		out[b.Endpoint] = behavior.FormatProbability(b.Probability)
	}
	return out
}

// A dump whose comments were lost (or never written) still explains: the
// Service is found by the hash in its chain names.
func TestExplainByChainHash(t *testing.T) {
	data, err := os.ReadFile("../testdata/kube-proxy-v1.36.3/two-nodes/node1.iptables-save.txt")
	if err != nil {
		t.Fatal(err)
	}
	noComments := regexp.MustCompile(` -m comment --comment ("[^"]*"|\S+)`).ReplaceAllString(string(data), "")
	rep := explainBare(t, noComments, "default/nginx:http")
	if len(rep.Frontends) != 1 {
		t.Fatalf("want the one ClusterIP frontend, got %+v", rep.Frontends)
	}
	got := backends(rep.Frontends[0], behavior.FromPod)
	want := map[string]string{"10.244.0.5:8080": "1/3", "10.244.0.6:8080": "1/3", "10.244.1.7:8080": "1/3"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("backends = %v, want %v", got, want)
		}
	}
}

// Every seed excerpt (iptables -S lines of several kube-proxy generations)
// parses and explains. The userspace proxier's chains alone are that
// mode's (inferred, as nothing else tells the mode), not its leftovers.
func TestExplainSeeds(t *testing.T) {
	for _, c := range []struct {
		file, ref string
		backends  int
		legacy    bool
	}{
		{"old-1.1x-clusterip.nat-rules.txt", "default/nginx", 3, false},
		{"v1.2x-clusterip-masq.nat-rules.txt", "default/nginx", 3, false},
		{"old-nodeport-mysql.nat-rules.txt", "default/mysql-service", 2, false},
		{"userspace-mode.nat-rules.txt", "default/ssh-service1", 1, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile("../testdata/seeds/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			rep := explainBare(t, string(data), c.ref)
			if len(rep.Frontends) == 0 {
				t.Fatal("no frontend explained")
			}
			f := rep.Frontends[0]
			if n := len(f.Outcomes[behavior.FromPod].Backends); n != c.backends {
				t.Errorf("%s: %d backends, want %d: %+v", f.Key, n, c.backends, f.Outcomes[behavior.FromPod])
			}
			legacy := false
			for _, fd := range rep.Findings {
				if fd.Type == behavior.LeftoverRules {
					legacy = true
				}
			}
			if legacy != c.legacy {
				t.Errorf("leftover rules reported: %v, want %v (%+v)", legacy, c.legacy, rep.Findings)
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), "inferred") {
				t.Errorf("notes do not say the table was inferred: %v", rep.Notes)
			}
		})
	}
}
