package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// profiler captures a Go profile of one command, as kubectl's --profile
// and --profile-output do: a slow drift on a large node can then be sent
// to the project as a file that says where its time went.
type profiler struct {
	name, output string
	cpu          *os.File
}

var profileNames = []string{"none", "cpu", "heap", "allocs", "goroutine", "threadcreate", "block", "mutex"}

func (p *profiler) addFlags(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&p.name, "profile", "none",
		"name of a Go profile to capture: one of ("+strings.Join(profileNames, "|")+")")
	cmd.PersistentFlags().StringVar(&p.output, "profile-output", "profile.pprof", "file to write the profile to")
}

// start starts the profile the flags name (a CPU profile runs until stop).
func (p *profiler) start() error {
	switch p.name {
	case "none":
		return nil
	case "cpu":
		f, err := os.Create(p.output)
		if err != nil {
			return fmt.Errorf("--profile-output: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--profile cpu: %w", err)
		}
		p.cpu = f
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	default:
		if !slices.Contains(profileNames, p.name) {
			return fmt.Errorf("--profile %q: want one of %s", p.name, strings.Join(profileNames, ", "))
		}
	}
	return nil
}

// stop ends the profile and writes it, once the command has run (whatever
// its outcome: a drift found is a profile worth having).
func (p *profiler) stop() error {
	switch p.name {
	case "none", "":
		return nil
	case "cpu":
		if p.cpu == nil {
			return nil
		}
		pprof.StopCPUProfile()
		return p.cpu.Close()
	}
	prof := pprof.Lookup(p.name)
	if prof == nil {
		return nil
	}
	f, err := os.Create(p.output)
	if err != nil {
		return fmt.Errorf("--profile-output: %w", err)
	}
	if p.name == "heap" || p.name == "allocs" {
		runtime.GC() // the heap as of the end, up to date
	}
	if err := prof.WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("writing the %s profile: %w", p.name, err)
	}
	return f.Close()
}
