package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newCompletionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var noDescriptions bool
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script for the svctrace executable",
		Long: `Print a shell completion script for the svctrace executable run by its own
name. The script defines only svctrace's functions: it leaves kubectl's
completion alone.

"kubectl svctrace <TAB>" is completed by kubectl itself (1.26 or newer): it
runs kubectl_complete-svctrace, found on PATH, which asks kubectl-svctrace.
Install that script (at the top of the svctrace repository) next to
kubectl-svctrace; no completion script is needed for it.

Completions list Services (NAMESPACE/NAME, and NAMESPACE/NAME:PORT for
explain), nodes, namespaces, output formats and IP families: from the
snapshot when --snapshot FILE is on the command line, else from the cluster.`,
		Example: `  # bash (the bash-completion package must be installed)
  source <(%[1]s completion bash)

  # zsh (after compinit)
  source <(%[1]s completion zsh)

  # fish
  %[1]s completion fish | source

  # PowerShell
  %[1]s completion powershell | Out-String | Invoke-Expression`,
		Args:                  cobra.ExactArgs(1),
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(streams.Out, !noDescriptions)
			case "zsh":
				if noDescriptions {
					err = root.GenZshCompletionNoDesc(streams.Out)
				} else {
					err = root.GenZshCompletion(streams.Out)
				}
			case "fish":
				err = root.GenFishCompletion(streams.Out, !noDescriptions)
			case "powershell":
				if noDescriptions {
					err = root.GenPowerShellCompletion(streams.Out)
				} else {
					err = root.GenPowerShellCompletionWithDesc(streams.Out)
				}
			default:
				return fmt.Errorf("no completion for the shell %q: want bash, zsh, fish or powershell", args[0])
			}
			if err != nil {
				return fmt.Errorf("writing the %s completion script: %w", args[0], err)
			}
			return nil
		},
	}
	name, _ := commandNames()
	cmd.Example = fmt.Sprintf(cmd.Example, name)
	cmd.Flags().BoolVar(&noDescriptions, "no-descriptions", false, "Leave the descriptions out of the completions")
	return cmd
}

// registerFlagCompletions makes the shell complete the values of the flags
// that addFlags defines.
func registerFlagCompletions(cmd *cobra.Command) {
	fixed := map[string][]string{
		"output": {"text\tthe report for people (default)", "wide\ttext with every rule on each path", "json", "yaml"},
		"family": {"IPv4", "IPv6"},
	}
	for flag, values := range fixed {
		if cmd.Flags().Lookup(flag) == nil {
			continue
		}
		_ = cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
		})
	}
	listed := map[string]func(ctx context.Context, cmd *cobra.Command) ([]string, error){
		"node":      nodeNames,
		"namespace": namespaceNames,
	}
	for flag, list := range listed {
		if cmd.Flags().Lookup(flag) == nil {
			continue
		}
		_ = cmd.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			ctx, cancel := completionContext(cmd)
			defer cancel()
			names, err := list(ctx, cmd)
			if err != nil {
				cobra.CompDebugln(fmt.Sprintf("completing --%s: %v", flag, err), false)
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, flag := range []string{"snapshot", "objects"} {
		if cmd.Flags().Lookup(flag) != nil {
			_ = cmd.MarkFlagFilename(flag, "yaml", "yml", "json")
		}
	}
}

// completeServiceArg completes a Service reference argument:
// NAMESPACE/NAME, and with ports NAMESPACE/NAME:PORT (port names and
// numbers).
func completeServiceArg(withPorts bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completionContext(cmd)
		defer cancel()
		ns := flagValue(cmd, "namespace")
		if b, err := cmd.Flags().GetBool("all-namespaces"); err == nil && b {
			ns = ""
		}
		svcs, err := listServices(ctx, cmd, ns)
		if err != nil {
			cobra.CompDebugln(fmt.Sprintf("completing a Service: %v", err), false)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return serviceCompletions(svcs, toComplete, defaultNamespace(cmd), withPorts), cobra.ShellCompDirectiveNoFileComp
	}
}

// serviceCompletions lists the Service references starting with
// toComplete. A reference without a namespace is read in defaultNS; when
// no NAMESPACE/NAME matches, bare names there are offered.
func serviceCompletions(svcs []corev1.Service, toComplete, defaultNS string, withPorts bool) []cobra.Completion {
	if ref, _, hasPort := strings.Cut(toComplete, ":"); hasPort {
		if !withPorts {
			return nil
		}
		return portCompletions(svcs, ref, toComplete, defaultNS)
	}
	var out []cobra.Completion
	for _, s := range svcs {
		if ref := s.Namespace + "/" + s.Name; strings.HasPrefix(ref, toComplete) {
			out = append(out, cobra.CompletionWithDesc(ref, serviceType(&s)))
		}
	}
	if len(out) == 0 && !strings.Contains(toComplete, "/") {
		for _, s := range svcs {
			if s.Namespace == defaultNS && strings.HasPrefix(s.Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.Name, serviceType(&s)))
			}
		}
	}
	if withPorts && namedInFull(out, toComplete) {
		// The Service is named in full: offer its ports as well.
		out = append(out, portCompletions(svcs, toComplete, toComplete, defaultNS)...)
	}
	return out
}

// portCompletions lists ref:PORT for the ports of the Service ref names,
// by name and by number, starting with toComplete.
func portCompletions(svcs []corev1.Service, ref, toComplete, defaultNS string) []cobra.Completion {
	ns, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		ns, name = defaultNS, ref
	}
	var out []cobra.Completion
	seen := map[string]bool{}
	add := func(port, desc string) {
		c := ref + ":" + port
		if !seen[c] && strings.HasPrefix(c, toComplete) {
			seen[c] = true
			out = append(out, cobra.CompletionWithDesc(c, desc))
		}
	}
	for _, s := range svcs {
		if s.Namespace != ns || s.Name != name {
			continue
		}
		for _, p := range s.Spec.Ports {
			desc := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
			if p.Name != "" {
				desc = p.Name + " " + desc
				add(p.Name, desc)
			}
			add(strconv.Itoa(int(p.Port)), desc)
		}
	}
	return out
}

// namedInFull tells whether ref is one of the completions.
func namedInFull(comps []cobra.Completion, ref string) bool {
	for _, c := range comps {
		if v, _, _ := strings.Cut(c, "\t"); v == ref {
			return true
		}
	}
	return false
}

func serviceType(s *corev1.Service) string {
	if s.Spec.Type == "" {
		return string(corev1.ServiceTypeClusterIP)
	}
	return string(s.Spec.Type)
}

// withPrefix keeps the choices (which may carry a description after a
// tab) that start with prefix.
func withPrefix(choices []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range choices {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
