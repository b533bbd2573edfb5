// Command kubectl-svctrace explains what a node's kernel does with packets
// sent to a Kubernetes Service, and whether that is what kube-proxy should
// have programmed. Installed on PATH it runs as "kubectl svctrace".
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/svctrace/svctrace/internal/wording"
)

// Exit codes, part of the command contract.
const (
	exitOK    = 0
	exitDrift = 1
	exitError = 2
)

// exitCodeError carries a specific exit code out of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	root, prof := newRootCommandProfiled(streams)
	// Ctrl-C or SIGTERM cancels the command's context, so that what it
	// started (a helper Pod) is undone; a second one kills it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := root.ExecuteContext(ctx)
	stop()
	if perr := prof.stop(); perr != nil {
		fmt.Fprintln(os.Stderr, "warning:", perr)
	}
	if err == nil {
		os.Exit(exitOK)
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(os.Stderr, "error:", wording.PrintableText(ec.err.Error()))
		}
		os.Exit(ec.code)
	}
	// An error can quote a dump or an object: no control character of
	// theirs reaches the terminal.
	fmt.Fprintln(os.Stderr, "error:", wording.PrintableText(err.Error()))
	os.Exit(exitError)
}
