package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/svctrace/svctrace/inspect"
	"github.com/svctrace/svctrace/internal/silentlistener"
	"github.com/svctrace/svctrace/nodeapi"
)

// Agent is one node's agent of the fleet: its node, its Pod (in the
// agent's namespace) and the address its API listens on.
type Agent struct {
	Node    string `json:"node"`
	Pod     string `json:"pod"`
	Address string `json:"address"`
}

// Start starts every agent's API with nodeapi.Start, as the agent's
// command does: a fresh certificate, the cluster's client CA, the real
// Auth (TokenReview and SubjectAccessReview against the API server of
// cfg), and the certificate's fingerprint published on the agent's Pod.
// Each agent has a client of its own (its own connection to the API
// server), as on its own node. report is what each serves (ReportFor).
// It returns once every API listens; publishing goes on in the
// background until ctx ends, and serving errors go to errc.
func Start(ctx context.Context, cfg *rest.Config, agents []Agent, report func(node string) ([]byte, error), workers int, log *slog.Logger, errc chan<- error) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan Agent)
	)
	for range max(1, workers) {
		wg.Go(func() {
			for a := range next {
				if err := startOne(ctx, cfg, a, report, log, errc); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, a := range agents {
		next <- a
	}
	close(next)
	wg.Wait()
	return firstErr
}

func startOne(ctx context.Context, cfg *rest.Config, a Agent, report func(node string) ([]byte, error), log *slog.Logger, errc chan<- error) error {
	c := rest.CopyConfig(cfg)
	// A Proxy function makes client-go give this client a transport of
	// its own (transports are shared between equal configs): one
	// connection per agent, as on a node of its own.
	c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return fmt.Errorf("agent of node %s: %w", a.Node, err)
	}
	body, err := report(a.Node)
	if err != nil {
		return err
	}
	o := nodeapi.Options{Node: a.Node, Address: a.Address, PodNamespace: inspect.AgentNamespace, PodName: a.Pod,
		Report: func() ([]byte, error) { return body, nil }, Log: log.With("node", a.Node)}
	if _, err := nodeapi.Start(ctx, cs, o, errc); err != nil {
		return fmt.Errorf("agent of node %s on %s: %w", a.Node, a.Address, err)
	}
	return nil
}

// Silent listens on address and never answers: the connections it takes
// wait until ctx ends (an agent whose node is up and whose API hangs).
func Silent(ctx context.Context, address string) error {
	_, err := silentlistener.Listen(ctx, address)
	return err
}
