package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// runAsCLIEnv makes the test binary run main() instead of the tests, so
// that a test can exec it under the name kubectl-svctrace.
const runAsCLIEnv = "SVCTRACE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsCLIEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

const labSnapshot = "../../examples/lab-iptables-v1.36.3.snapshot.yaml"

// complete runs "__complete ARGS..." in-process and returns the choices
// (without descriptions) and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	out, stderr, code := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr)
	}
	return parseCompletions(t, out)
}

func parseCompletions(t *testing.T, out string) ([]string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	directive := lines[len(lines)-1]
	if !strings.HasPrefix(directive, ":") {
		t.Fatalf("no directive line at the end of:\n%s", out)
	}
	var choices []string
	for _, l := range lines[:len(lines)-1] {
		v, _, _ := strings.Cut(l, "\t")
		choices = append(choices, v)
	}
	return choices, directive
}

func TestCompleteServicesFromSnapshot(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"every Service", []string{"explain", "--snapshot", labSnapshot, ""},
			[]string{"default/crowded", "default/dns", "default/draining", "default/empty", "default/extname", "default/headless",
				"default/hostnet", "default/kube-api", "default/kubernetes", "default/local-node1", "default/multi", "default/named",
				"default/sctp", "default/sticky", "default/web", "default/web-ext", "default/web-itp", "default/web-lb",
				"default/web-local", "default/web-np", "default/zoned"}},
		{"prefix", []string{"drift", "--snapshot", labSnapshot, "default/web-l"}, []string{"default/web-lb", "default/web-local"}},
		{"bare name in the default namespace", []string{"explain", "--snapshot", labSnapshot, "web-"},
			[]string{"web-ext", "web-itp", "web-lb", "web-local", "web-np"}},
		{"-n restricts the namespace", []string{"explain", "--snapshot", labSnapshot, "-n", "shop", ""}, nil},
		{"ports by name and number", []string{"explain", "--snapshot", labSnapshot, "default/multi:"},
			[]string{"default/multi:http", "default/multi:80", "default/multi:alt", "default/multi:81"}},
		{"one port number for two protocols", []string{"explain", "--snapshot", labSnapshot, "default/dns:5"}, []string{"default/dns:53"}},
		{"a Service named in full offers its ports", []string{"explain", "--snapshot", labSnapshot, "default/sticky"},
			[]string{"default/sticky", "default/sticky:http", "default/sticky:80"}},
		{"ports of a bare name", []string{"explain", "--snapshot", labSnapshot, "web-np:"}, []string{"web-np:http", "web-np:80"}},
		{"drift takes no port", []string{"drift", "--snapshot", labSnapshot, "default/multi:"}, nil},
		{"one argument only", []string{"explain", "--snapshot", labSnapshot, "default/web", ""}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, directive := complete(t, c.args...)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if directive != ":4" {
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
		})
	}
}

func TestCompleteFlagsFromSnapshot(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"--node", []string{"drift", "--snapshot", labSnapshot, "--node", ""}, []string{"node1", "node2"}},
		{"--node prefix", []string{"explain", "--snapshot", labSnapshot, "--node", "node2"}, []string{"node2"}},
		// Its API objects hold node1 and node2, its node states node1 only.
		{"--node names a node state", []string{"trace", "--snapshot", "../../examples/two-nodes.snapshot.yaml", "--node", ""}, []string{"node1"}},
		{"-n", []string{"explain", "--snapshot", "../../examples/two-nodes.snapshot.yaml", "-n", ""}, []string{"default", "shop"}},
		{"--namespace", []string{"drift", "--snapshot", labSnapshot, "--namespace", ""}, []string{"default"}},
		{"-o", []string{"explain", "-o", ""}, []string{"text", "wide", "json", "yaml"}},
		{"--output in reconcile", []string{"reconcile", "conntrack", "--output", "j"}, []string{"json"}},
		{"--family", []string{"drift", "--family", ""}, []string{"IPv4", "IPv6"}},
		{"--node from an objects file", []string{"collect", "--objects", fixture + "objects.yaml", "--node", ""}, []string{"node1", "node2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, directive := complete(t, c.args...)
			slices.Sort(got)
			slices.Sort(c.want)
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if directive != ":4" {
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
		})
	}
}

func TestCompleteSnapshotFlagOffersFiles(t *testing.T) {
	got, directive := complete(t, "explain", "--snapshot", "")
	want := []string{"yaml", "yml", "json"}
	if !slices.Equal(got, want) || directive != ":8" {
		t.Errorf("got %q %s, want the extensions %q with :8 (filter file extensions)", got, directive, want)
	}
}

// A completion that cannot reach the cluster offers nothing and prints no
// error into the shell.
func TestCompleteUnreachableCluster(t *testing.T) {
	kc := writeKubeconfig(t, "https://127.0.0.1:1")
	for _, args := range [][]string{
		{"explain", "--kubeconfig", kc, ""},
		{"drift", "--kubeconfig", kc, "--node", ""},
		{"explain", "--kubeconfig", kc, "-n", ""},
		{"explain", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), ""},
		{"explain", "--snapshot", filepath.Join(t.TempDir(), "missing.yaml"), ""},
	} {
		stdout, stderr := completeExec(t, args...)
		if stdout != ":4\n" {
			t.Errorf("%q: stdout %q, want only the directive :4", args, stdout)
		}
		if stderr != "Completion ended with directive: ShellCompDirectiveNoFileComp\n" {
			t.Errorf("%q: stderr %q, want only cobra's directive note", args, stderr)
		}
	}
}

// completeExec runs kubectl_complete-svctrace ARGS... the way kubectl
// does, with the test binary installed beside it as kubectl-svctrace.
func completeExec(t *testing.T, args ...string) (string, string) {
	t.Helper()
	dir := installPlugin(t, true)
	return execComplete(t, filepath.Join(dir, "kubectl_complete-svctrace"), os.Getenv("PATH"), args...)
}

// installPlugin puts kubectl_complete-svctrace in a new directory and,
// when beside is true, the test binary there too as kubectl-svctrace.
func installPlugin(t *testing.T, beside bool) string {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile("../../kubectl_complete-svctrace")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-svctrace"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if beside {
		linkTestBinary(t, dir)
	}
	return dir
}

func linkTestBinary(t *testing.T, dir string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "kubectl-svctrace")); err != nil {
		t.Fatal(err)
	}
}

func execComplete(t *testing.T, script, path string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(script, args...)
	cmd.Env = append(os.Environ(), runAsCLIEnv+"=1", "PATH="+path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s", script, args, err, errb.String())
	}
	return out.String(), errb.String()
}

// kubectl runs kubectl_complete-svctrace with the plugin's arguments, the
// last being the word to complete; the script finds kubectl-svctrace beside
// it or on PATH.
func TestKubectlCompleteScript(t *testing.T) {
	beside := installPlugin(t, true)
	alone := installPlugin(t, false)
	bin := t.TempDir()
	linkTestBinary(t, bin)
	for _, c := range []struct {
		name, dir, path string
		args            []string
		want            string
	}{
		{"beside", beside, "/usr/bin:/bin", []string{"explain", "--snapshot", labSnapshot, "--node", "node1", "default/multi:a"},
			"default/multi:alt\talt 81/TCP\n:4\n"},
		{"on PATH", alone, bin + ":/usr/bin:/bin", []string{"drift", "--snapshot", labSnapshot, "--node", ""},
			"node1\nnode2\n:4\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _ := execComplete(t, filepath.Join(c.dir, "kubectl_complete-svctrace"), c.path, c.args...)
			if out != c.want {
				t.Errorf("stdout %q, want %q", out, c.want)
			}
		})
	}
}

var bashFunctionRE = regexp.MustCompile(`(?m)^\s*(?:function\s+)?([A-Za-z0-9_:.-]+)\s*\(\)`)

// The completion scripts are for the command kubectl-svctrace and define
// nothing of kubectl's own completion.
func TestCompletionScriptsAreSvctraceOwn(t *testing.T) {
	registration := map[string]string{
		"bash":       "complete -o default -F __start_kubectl-svctrace kubectl-svctrace\n",
		"zsh":        "compdef _kubectl-svctrace kubectl-svctrace\n",
		"fish":       "complete -c kubectl-svctrace -e\n",
		"powershell": "Register-ArgumentCompleter -CommandName 'kubectl-svctrace'",
	}
	for shell, reg := range registration {
		t.Run(shell, func(t *testing.T) {
			script, stderr, code := run(t, "completion", shell)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(script, reg) {
				t.Errorf("the script does not register %q", reg)
			}
			for _, m := range regexp.MustCompile(`(?i)kubectl[-_]([a-z]*)`).FindAllStringSubmatch(script, -1) {
				if !strings.HasPrefix(strings.ToLower(m[1]), "svctrace") {
					t.Errorf("the script names %q, which is not svctrace's", m[0])
				}
			}
			if regexp.MustCompile(`(?i)kubectl(?:[^-_]|$)`).MatchString(script) {
				t.Errorf("the script names kubectl itself:\n%s", script)
			}
		})
	}
	script, _, _ := run(t, "completion", "bash")
	for _, m := range bashFunctionRE.FindAllStringSubmatch(script, -1) {
		if !strings.HasPrefix(m[1], "__kubectl-svctrace_") && m[1] != "__start_kubectl-svctrace" {
			t.Errorf("the bash script defines %s, not one of svctrace's own functions", m[1])
		}
	}
	if n := len(bashFunctionRE.FindAllString(script, -1)); n < 5 {
		t.Errorf("found %d functions in the bash script: the pattern no longer reads it", n)
	}
}

// Sourced into a real bash, the script adds only svctrace's functions and
// a completion for kubectl-svctrace, and leaves kubectl's alone.
func TestBashCompletionSourced(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash here")
	}
	script, _, _ := run(t, "completion", "bash")
	p := filepath.Join(t.TempDir(), "svctrace.bash")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := `__start_kubectl() { :; }; complete -F __start_kubectl kubectl
declare -F > "$1.before"; source "$2"; declare -F > "$1.after"
complete -p kubectl-svctrace; complete -p kubectl; declare -f __start_kubectl`
	dir := t.TempDir()
	out, err := exec.Command(bash, "--norc", "-c", prog, "bash", filepath.Join(dir, "funcs"), p).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := "complete -o default -F __start_kubectl-svctrace kubectl-svctrace\ncomplete -F __start_kubectl kubectl\n__start_kubectl () \n{ \n    :\n}\n"
	if string(out) != want {
		t.Errorf("after sourcing:\n%s\nwant:\n%s", out, want)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "funcs.before"))
	after, _ := os.ReadFile(filepath.Join(dir, "funcs.after"))
	old := map[string]bool{}
	for _, l := range strings.Split(string(before), "\n") {
		old[l] = true
	}
	added := 0
	for _, l := range strings.Split(string(after), "\n") {
		if old[l] {
			continue
		}
		added++
		name := strings.TrimPrefix(l, "declare -f ")
		if !strings.HasPrefix(name, "__kubectl-svctrace_") && name != "__start_kubectl-svctrace" {
			t.Errorf("sourcing defined %s", name)
		}
	}
	if added == 0 {
		t.Error("sourcing defined no function")
	}
}

func TestCompletionUnknownShell(t *testing.T) {
	_, stderr, code := run(t, "completion", "tcsh")
	if code != 2 || !strings.Contains(stderr, `"tcsh"`) || !strings.Contains(stderr, "bash, zsh, fish or powershell") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
