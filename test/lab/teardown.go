//go:build linux

package lab

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"
)

// teardownOnSignal tears the lab down on SIGINT/SIGTERM/SIGHUP and re-raises the signal.
func (l *Lab) teardownOnSignal() func() {
	sigc := make(chan os.Signal, 1)
	done := make(chan struct{})
	// Signals the process ignores (e.g. SIGINT in a background job) stay ignored.
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(sigc, s)
		}
	}
	go func() {
		select {
		case s := <-sigc:
			fmt.Fprintf(os.Stderr, "lab: %v: tearing down %s*\n", s, l.prefix)
			l.teardownNow()
			fmt.Fprintf(os.Stderr, "lab: logs are in %s\n", l.Dir)
			// Re-raise. Other labs in this process still subscribed absorb it while they
			// tear down; the last one's re-raise meets the default action and ends the process.
			signal.Stop(sigc)
			if sig, ok := s.(syscall.Signal); ok {
				syscall.Kill(os.Getpid(), sig)
			}
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(done)
	}
}

func (l *Lab) teardown() {
	if l.stopSignals != nil {
		l.stopSignals()
	}
	if l.t.Failed() {
		l.dumpLogs()
	}
	l.teardownNow()
}

// teardownNow stops every process the lab started (by PID, kube-proxies and listeners first)
// and deletes every namespace it created. Idempotent.
func (l *Lab) teardownNow() {
	l.teardownOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		procs := slices.Clone(l.procs)
		namespaces := slices.Clone(l.namespaces)
		nodes := slices.Clone(l.nodes)
		l.mu.Unlock()
		var errs []error
		// Kubelets and containerds first, with their Pods, cgroups and mounts.
		for _, n := range nodes {
			if n.runtime != nil {
				errs = append(errs, stopNodeRuntime(n.runtime))
			}
		}
		// Reverse start order: kube-proxies and listeners, then kube-apiserver, then etcd.
		for _, p := range slices.Backward(procs) {
			if err := p.stop(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		for _, ns := range slices.Backward(namespaces) {
			if err := delNetns(ns); err != nil {
				errs = append(errs, err)
			}
		}
		if l.api != nil {
			l.api.close()
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(os.Stderr, "lab: teardown: %v\n", err)
		}
	})
}

// dumpLogs logs the tail of every process log (on failure).
func (l *Lab) dumpLogs() {
	l.mu.Lock()
	procs := slices.Clone(l.procs)
	l.mu.Unlock()
	for _, p := range procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		l.t.Logf("lab: --- last lines of %s (%s) ---\n%s", p.name, p.log, lastLines(string(b), 25))
	}
}
