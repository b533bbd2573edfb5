package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
)

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	text := `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "` + server + `"}
users:
- name: admin
  user: {token: not-a-secret}
contexts:
- name: lab
  context: {cluster: lab, user: admin, namespace: shop}
current-context: lab
`
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noCluster leaves the process with no kubeconfig and no in-cluster
// configuration, whatever the machine has.
func noCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_MASTER", "")
}

// parsedOptions returns common options with the flags parsed from args.
func parsedOptions(t *testing.T, args ...string) (*commonOptions, *cobra.Command) {
	t.Helper()
	o := newCommonOptions(genericiooptions.NewTestIOStreamsDiscard())
	cmd := &cobra.Command{Use: "test"}
	o.addFlags(cmd, true)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return o, cmd
}

func TestNoKubeconfig(t *testing.T) {
	noCluster(t)
	missing := os.Getenv("KUBECONFIG")
	_, stderr, code := run(t, "drift", "--local", "--node", "node1", "--kube-proxy-metrics-address", "127.0.0.1:1")
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, stderr)
	}
	for _, want := range []string{"no kubeconfig found", "KUBECONFIG=" + missing, "in-cluster service account", "--kubeconfig FILE", "--snapshot FILE"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("error lacks %q: %s", want, stderr)
		}
	}

	o, _ := parsedOptions(t)
	_, err := o.clientset()
	if !errors.Is(err, clientcmd.ErrEmptyConfig) {
		t.Errorf("error %v does not wrap clientcmd.ErrEmptyConfig", err)
	}
	t.Setenv("KUBECONFIG", "")
	if _, statErr := os.Stat(clientcmd.RecommendedHomeFile); os.IsNotExist(statErr) {
		o, _ := parsedOptions(t)
		_, err := o.clientset()
		if want := "KUBECONFIG is not set, " + clientcmd.RecommendedHomeFile + " does not exist"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without KUBECONFIG: %v, want %q", err, want)
		}
	}

	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o, _ = parsedOptions(t, "--kubeconfig", empty)
	if _, err := o.clientset(); err == nil || !strings.Contains(err.Error(), "the kubeconfig "+empty+" (--kubeconfig) is empty") {
		t.Errorf("empty --kubeconfig: %v", err)
	}

	// --server needs no kubeconfig.
	o, _ = parsedOptions(t, "--server", "https://192.0.2.1:6443")
	cfg, err := restConfig(o.configFlags)
	if err != nil || cfg.Host != "https://192.0.2.1:6443" {
		t.Errorf("--server: %v, %+v", err, cfg)
	}
}

func TestRequestTimeout(t *testing.T) {
	noCluster(t)
	kc := writeKubeconfig(t, "https://192.0.2.1:6443")
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 30 * time.Second},
		{[]string{"--request-timeout", "5s"}, 5 * time.Second},
		{[]string{"--request-timeout", "0"}, 0},
	} {
		o, _ := parsedOptions(t, append([]string{"--kubeconfig", kc}, c.args...)...)
		cfg, err := restConfig(o.configFlags)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.Timeout != c.want {
			t.Errorf("%q: timeout %v, want %v", c.args, cfg.Timeout, c.want)
		}
	}
	out, _, _ := run(t, "explain", "--help")
	if !strings.Contains(out, `(default "30s")`) {
		t.Errorf("explain --help does not show the 30s default of --request-timeout:\n%s", out)
	}
}

func TestConfigFlagsFrom(t *testing.T) {
	kc := writeKubeconfig(t, "https://192.0.2.1:6443")
	_, cmd := parsedOptions(t, "--kubeconfig", kc, "--context", "lab", "--as-group", "a", "--as-group", "b", "-n", "web")
	cf, err := configFlagsFrom(cmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if *cf.KubeConfig != kc || *cf.Context != "lab" || *cf.Namespace != "web" || !slices.Equal(*cf.ImpersonateGroup, []string{"a", "b"}) {
		t.Errorf("copied flags: kubeconfig %q context %q namespace %q groups %q", *cf.KubeConfig, *cf.Context, *cf.Namespace, *cf.ImpersonateGroup)
	}
	if *cf.Timeout != "0" {
		t.Errorf("an unset flag was copied: --request-timeout %q", *cf.Timeout)
	}
}
