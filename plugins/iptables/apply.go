package iptables

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/svctrace/svctrace/internal/detached"
)

// tool is the name of the iptables tool of a backend and family: save or
// restore, iptables-nft-restore, ip6tables-legacy-save, ...
func tool(what, backend, family string) (string, error) {
	prefix := "iptables"
	if family == "IPv6" {
		prefix = "ip6tables"
	}
	switch backend {
	case "nf_tables":
		return prefix + "-nft-" + what, nil
	case "legacy":
		return prefix + "-legacy-" + what, nil
	}
	return "", fmt.Errorf("iptables backend %q: it is legacy or nf_tables", backend)
}

// SaveKernel dumps every table of a backend and family with its save tool.
func SaveKernel(ctx context.Context, backend, family string) (string, error) {
	name, err := tool("save", backend, family)
	if err != nil {
		return "", err
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// RestoreKernel writes a payload with the restore tool of a backend and
// family, --noflush: only what the payload names changes, each table in
// one commit. The tool runs detached (see package detached), so once
// started it finishes even if svctrace is stopped (or its terminal
// interrupts it): the kernel then holds the new state of each table,
// never part of one. started, if set, is called once the tool runs.
func RestoreKernel(ctx context.Context, backend, family, payload string, started func()) error {
	name, err := tool("restore", backend, family)
	if err != nil {
		return err
	}
	w := detached.Write{
		Input:   []byte(payload),
		Pattern: "svctrace-restore-*.rules",
		Stdin:   true,
		Command: func(string) *exec.Cmd { return exec.Command(name, "--noflush", "-w", "5") },

		InputError: "writing the restore payload",
		StartError: name,
		RunError:   name + " --noflush",
	}
	return w.Run(ctx, started)
}
