package nodeapi

import (
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestRequestTimeout: --request-timeout (the kubeconfig's Timeout) bounds
// a call to an agent that accepts the connection and never answers.
func TestRequestTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "svctrace", Name: "agent-x",
		Annotations: map[string]string{CertAnnotation: "00", PortAnnotation: strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}},
		Status: corev1.PodStatus{PodIP: "127.0.0.1"}}
	c, err := NewNodeClient(&rest.Config{BearerToken: "t", Timeout: 300 * time.Millisecond}, pod)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Report(t.Context()); err == nil {
		t.Fatal("a silent agent answered")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v with a timeout of 300ms", d)
	}
}
