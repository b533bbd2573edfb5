package iptables

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/svctrace/svctrace/internal/procgroup"
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
// one commit. The payload is in a file before the tool starts, and the
// tool runs in its own process group, so once started it finishes even
// if svctrace is stopped (or its terminal interrupts it): the kernel then
// holds the new state of each table, never part of one. started, if set,
// is called once the tool runs.
func RestoreKernel(ctx context.Context, backend, family, payload string, started func()) error {
	name, err := tool("restore", backend, family)
	if err != nil {
		return err
	}
	// Once the tool runs, it is not stopped: the context counts only
	// before.
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp("", "svctrace-restore-*.rules")
	if err != nil {
		return fmt.Errorf("writing the restore payload: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(payload); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing the restore payload: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing the restore payload: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(name, "--noflush", "-w", "5")
	cmd.Stdin, cmd.Stderr = f, &stderr
	procgroup.Detach(cmd)
	err = cmd.Start()
	// The tool holds the file open: its name is no longer needed.
	os.Remove(f.Name())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if started != nil {
		started()
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s --noflush: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
