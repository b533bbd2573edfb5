package survey_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/svctrace/svctrace/survey"
)

// TestLiveFollowsChanges: with the lab's capture as the last read, a
// Service's EndpointSlice written in the API (client-go's fake, which
// serves list and watch) shows at once in a new survey, its difference
// pending rather than drift, and the nodes are to be read again once
// kube-proxy has had time to sync.
func TestLiveFollowsChanges(t *testing.T) {
	s := load(t, "lab-iptables-v1.36.3.snapshot.yaml")
	s.Nodes[0].CapturedAt = time.Now()
	s.Nodes = s.Nodes[:1]
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range s.Cluster.Services {
		if _, err := cs.CoreV1().Services(s.Cluster.Services[i].Namespace).Create(ctx, &s.Cluster.Services[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range s.Cluster.EndpointSlices {
		e := &s.Cluster.EndpointSlices[i]
		if _, err := cs.DiscoveryV1().EndpointSlices(e.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l := survey.NewLive("IPv4")
	if err := l.Watch(ctx, cs); err != nil {
		t.Fatal(err)
	}
	first := l.Remember(s, "live", nil)
	if len(first.Findings())+len(first.Pending()) != 0 {
		t.Fatalf("the capture as read: %d findings, %d pending", len(first.Findings()), len(first.Pending()))
	}
	updated := make(chan *survey.Survey, 4)
	go l.Follow(ctx, func(sv *survey.Survey) { updated <- sv }, func() {})
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slice.Endpoints = slice.Endpoints[:2]
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case sv := <-updated:
		if len(sv.Findings()) != 0 || len(sv.Pending()) == 0 || sv.Pending()[0].Service != "default/web:http" {
			t.Errorf("after the change: drift %v, pending %v", sv.Findings(), sv.Pending())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no survey after the change")
	}
}
