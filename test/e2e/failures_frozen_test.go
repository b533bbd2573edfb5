//go:build linux

package e2e

import (
	"slices"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// watchLag is how long svctrace lets kube-proxy's watch lag behind the
// API (analysis.watchLag), and a little more.
const watchLag = 32 * time.Second

// relayPort is where the frozen case's relay to the API server listens.
const relayPort = 6444

// manifest names the object of a one-object manifest.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct{ Name, Namespace string }
}

func apiObject(t *testing.T, text string) manifest {
	t.Helper()
	var m manifest
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// frozenWatch runs a case whose kube-proxy no longer sees the API: node1's
// kube-proxy reaches the API server through a relay that freezes once it
// has synced, as a load balancer that keeps dead connections open does.
// Its /healthz stays 200, since nothing waits; the case's API change,
// made well after its last queued change, must show as
// KubeProxyNotSyncing beside what it left undone. Undone, kube-proxy is
// restarted the lab's way, writes the change, and the change is deleted.
func frozenWatch(t *testing.T, c *cluster, fc failureCase) {
	obj := apiObject(t, fc.API)
	relay, err := c.StartAPIRelay(relayPort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	// Whatever happens, the next case finds the API and node1 as the
	// matrix left them: the change gone, kube-proxy stopped.
	t.Cleanup(func() {
		relay.Thaw()
		_ = c.Delete(obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name)
		if c.KubeProxyRunning("node1") {
			_ = c.StopKubeProxy("node1")
		}
	})
	// Its zone label is learnt again (startSynced) while the API still
	// answers.
	args := append(slices.Clone(c.proxyArgs), fc.ProxyArgs...)
	c.startSynced(t, "node1", append(args, "--master=https://"+relay.Addr))
	relay.Freeze()
	time.Sleep(watchLag)
	c.Apply(t, fc.API)
	time.Sleep(watchLag)
	waitDrift(t, c, "node1", slices.Clone(fc.Want[c.mode]))
	if err := c.StopKubeProxy("node1"); err != nil {
		t.Fatal(err)
	}
	relay.Thaw()
	c.startSynced(t, "node1", c.proxyArgs)
	deleteWritten(t, c, obj)
}
