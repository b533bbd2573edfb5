package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/snapshot"
)

const configzTestdata = "../../inspect/testdata/configz_check/"

// configzLab returns the kube-proxy ConfigMap and Pod captured from the
// lab, and what its kube-proxy served on /configz, edited.
func configzLab(t *testing.T, edit func(c map[string]any)) ([]runtime.Object, snapshot.ProxyConfig) {
	t.Helper()
	objs, err := os.ReadFile(configzTestdata + "kubeadm-objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(objs), "\n---\n")
	var cm corev1.ConfigMap
	var pod corev1.Pod
	if err := errors.Join(yaml.Unmarshal([]byte(docs[0]), &cm), yaml.Unmarshal([]byte(docs[1]), &pod)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(configzTestdata + "kubeadm-iptables-configz.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(doc["kubeproxy.config.k8s.io"])
	}
	data, _ = json.Marshal(doc)
	pc, err := inspect.ParseKubeProxyConfiguration(data)
	if err != nil {
		t.Fatal(err)
	}
	return []runtime.Object{&cm, &pod}, pc
}

// configzOptions are a repair command's options (it has --apply) on
// node1, parsed from args; ErrOut is returned.
func configzOptions(t *testing.T, args ...string) (*commonOptions, *bytes.Buffer) {
	t.Helper()
	streams, _, _, errOut := genericiooptions.NewTestIOStreams()
	o := newCommonOptions(streams)
	cmd := &cobra.Command{Use: "rules"}
	o.addFlags(cmd, true)
	cmd.Flags().Bool("apply", false, "")
	if err := cmd.ParseFlags(append([]string{"--local", "--node", "node1"}, args...)); err != nil {
		t.Fatal(err)
	}
	return o, errOut
}

func forgeBridge(c map[string]any) {
	c["detectLocalMode"] = "BridgeInterface"
	c["detectLocal"] = map[string]any{"bridgeInterface": "cni0"}
}

// TestConfigzCheckRefusesApply: a /configz that disagrees with the
// kube-proxy Pod's ConfigMap stops --apply before anything is written,
// with exit code 2 and what to check; the read after the write (the
// apply's read-back) only notes it.
func TestConfigzCheckRefusesApply(t *testing.T) {
	objs, forged := configzLab(t, forgeBridge)
	o, _ := configzOptions(t, "--apply")
	s := &snapshot.Snapshot{}
	err := o.crossCheckConfigz(context.Background(), fake.NewClientset(objs...), forged, s)
	var ec *exitCodeError
	if !errors.As(err, &ec) || ec.code != exitError {
		t.Fatalf("error %v, want exit code %d", err, exitError)
	}
	for _, want := range []string{"refusing to repair", "/configz at 127.0.0.1:10249", "ConfigMap kube-system/kube-proxy (config.conf)",
		`detectLocalMode: "BridgeInterface" in /configz, "ClusterCIDR" in the cluster`, `bridgeInterface: "cni0" in /configz, "(none)" in the cluster`,
		"ss -ltnp 'sport = :10249'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if err := o.crossCheckConfigz(context.Background(), fake.NewClientset(objs...), forged, s); err != nil || len(s.Metadata.Notes) != 1 {
		t.Errorf("read-back: %v, notes %q: want one note and no error", err, s.Metadata.Notes)
	}
}

// TestConfigzCheckDryRun: a dry run notes the dispute (and warns, since
// a repair's report does not show notes); agreement adds nothing;
// nothing to compare with is noted; --cluster-cidr takes the cluster
// CIDRs out of the comparison.
func TestConfigzCheckDryRun(t *testing.T) {
	ctx := context.Background()
	objs, forged := configzLab(t, forgeBridge)
	o, errOut := configzOptions(t)
	s := &snapshot.Snapshot{}
	if err := o.crossCheckConfigz(ctx, fake.NewClientset(objs...), forged, s); err != nil {
		t.Fatal(err)
	}
	if len(s.Metadata.Notes) != 1 || !strings.Contains(s.Metadata.Notes[0], `detectLocalMode: "BridgeInterface" in /configz, "ClusterCIDR" in the cluster`) ||
		!strings.Contains(s.Metadata.Notes[0], "a repair (--apply) would refuse") {
		t.Errorf("notes %q", s.Metadata.Notes)
	}
	if !strings.Contains(errOut.String(), "warning: kube-proxy's /configz at 127.0.0.1:10249, a port without authentication, disagrees") {
		t.Errorf("stderr %q", errOut.String())
	}

	objs, real := configzLab(t, nil)
	s = &snapshot.Snapshot{}
	if err := o.crossCheckConfigz(ctx, fake.NewClientset(objs...), real, s); err != nil || len(s.Metadata.Notes) != 0 {
		t.Errorf("agreement: %v, notes %q", err, s.Metadata.Notes)
	}

	s = &snapshot.Snapshot{}
	if err := o.crossCheckConfigz(ctx, fake.NewClientset(), real, s); err != nil || len(s.Metadata.Notes) != 1 ||
		!strings.Contains(s.Metadata.Notes[0], "could not be confirmed: no kube-proxy Pod runs on node node1") {
		t.Errorf("nothing to compare: %v, notes %q", err, s.Metadata.Notes)
	}

	o, _ = configzOptions(t, "--apply", "--cluster-cidr", "10.64.0.0/14")
	_, otherCIDR := configzLab(t, func(c map[string]any) { c["clusterCIDR"] = "10.64.0.0/14" })
	s = &snapshot.Snapshot{}
	if err := o.crossCheckConfigz(ctx, fake.NewClientset(objs...), otherCIDR, s); err != nil || len(s.Metadata.Notes) != 0 {
		t.Errorf("--cluster-cidr given: %v, notes %q", err, s.Metadata.Notes)
	}
}
