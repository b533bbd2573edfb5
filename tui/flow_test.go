package tui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/svctrace/svctrace/survey"
)

// waitScreen waits until the program's output shows text.
func waitScreen(t *testing.T, tm *teatest.TestModel, text string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

func keyPress(k string) tea.Msg { return keyMsgs(k)[0] }

// TestFlowSlowRead runs the UI in a real program: while the first read
// is under way the keys still answer (the full help opens and closes), a
// failed read says why and r tries again, and a survey the watch brings
// shows without a read.
func TestFlowSlowRead(t *testing.T) {
	healthy := survey.New(loadExample(t, nftSnapshot), "live", survey.Options{})
	release := make(chan struct{})
	var reads atomic.Int32
	load := func(ctx context.Context) (*survey.Survey, error) {
		n := reads.Add(1)
		if n == 1 {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return nil, errors.New("node1: the agent did not answer")
		}
		return healthy, nil
	}
	a := New(Options{Load: load, Mono: true})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(80, 24))
	waitScreen(t, tm, "reading")
	// Screens opened before the first read come back filled by it.
	tm.Send(keyPress("f"))
	tm.Send(keyPress("esc"))
	tm.Send(keyPress("?"))
	waitScreen(t, tm, "scroll left")
	tm.Send(keyPress("j"))
	close(release)
	waitScreen(t, tm, "the agent did not answer")
	tm.Send(keyPress("r"))
	waitScreen(t, tm, "default/crowded")

	// The watch brings a survey where default/web lost an endpoint.
	s := broken(t)
	tm.Send(Updated(survey.New(s, "live", survey.Options{})))
	waitScreen(t, tm, "2: node1")
	tm.Send(keyPress("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*App)
	if got := reads.Load(); got != 2 {
		t.Errorf("%d reads, want 2 (the first, then r)", got)
	}
	if !strings.Contains(screenText(final), "default/web") || final.loadErr != nil {
		t.Errorf("final screen:\n%s\nerror: %v", screenText(final), final.loadErr)
	}
}

// TestFlowPeriodic: with Every set the state is read again on its own,
// and a read asked for (Reread, as after a watched change) does not start
// a second period.
func TestFlowPeriodic(t *testing.T) {
	sv := survey.New(loadExample(t, nftSnapshot), "live", survey.Options{})
	var reads atomic.Int32
	a := New(Options{Every: 200 * time.Millisecond, Mono: true, Load: func(context.Context) (*survey.Survey, error) {
		reads.Add(1)
		return sv, nil
	}})
	tm := teatest.NewTestModel(t, a, teatest.WithInitialTermSize(80, 24))
	waitScreen(t, tm, "default/crowded")
	tm.Send(Reread())
	time.Sleep(1100 * time.Millisecond)
	tm.Send(keyPress("ctrl+c"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	// About 1.1 s / 0.2 s reads, plus the first and the one asked for; a
	// second period would double it.
	if n := reads.Load(); n < 4 || n > 9 {
		t.Errorf("%d reads in 1.1 s at one per 0.2 s", n)
	}
}
