//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Create is one object for CreateAll: the JSON body POSTed to the collection at Path (e.g.
// "/api/v1/namespaces/ns/services").
type Create struct {
	Path string
	Body []byte
}

// CreateAll POSTs every object as admin, with workers requests in flight at once (at least
// one), and returns the first error, naming the object's path and position; the objects after
// an error are not sent. It is for many objects (node-scale benchmarks): unlike Apply it neither
// creates namespaces nor applies status, and an object that exists is an error. Services and
// EndpointSlices count as changes for WaitSynced.
func (l *Lab) CreateAll(ctx context.Context, workers int, objs []Create) error {
	workers = max(1, min(workers, len(objs)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := l.api.do(ctx, "POST", objs[i].Path, "application/json", objs[i].Body); err != nil {
					errOnce.Do(func() {
						firstErr = fmt.Errorf("lab: creating object %d of %d (%s): %w", i+1, len(objs), objs[i].Path, err)
						cancel()
					})
					return
				}
			}
		}()
	}
send:
	for i := range objs {
		select {
		case next <- i:
		case <-ctx.Done():
			break send
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("lab: creating objects: %w", ctx.Err())
	}
	// WaitSynced needs the time of the last change kube-proxy watches; noteChange knows
	// which kinds those are.
	seen := map[string]bool{}
	for _, o := range objs {
		var h struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(o.Body, &h) == nil && !seen[h.Kind] {
			seen[h.Kind] = true
			l.noteChange(h.Kind)
		}
	}
	return firstErr
}
