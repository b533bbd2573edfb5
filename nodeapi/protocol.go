package nodeapi

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Where the agent serves the API, and what its Pod says of it.
const (
	// DefaultPort is the agent's API port on the node.
	DefaultPort = 9860
	// CertAnnotation holds the hex SHA-256 of the agent's serving
	// certificate (DER), which the CLI pins.
	CertAnnotation = "svctrace.dev/api-cert-sha256"
	// PortAnnotation holds the port the API is served on.
	PortAnnotation = "svctrace.dev/api-port"
)

// The virtual resource the API server authorises: nodes/svctrace, by node
// name, "get" to read and "update" to repair.
const (
	Resource    = "nodes"
	Subresource = "svctrace"
	VerbRead    = "get"
	VerbRepair  = "update"
)

// The API's paths.
const (
	PathNodeState = "/v1/node-state"
	PathReport    = "/v1/report"
	PathRules     = "/v1/reconcile/rules"
	PathRollback  = "/v1/reconcile/rollback"
	PathConntrack = "/v1/reconcile/conntrack"
)

// NodeStateRequest asks for the node's kernel state, with the conntrack
// entries to the given addresses.
type NodeStateRequest struct {
	ConntrackDst []string `json:"conntrackDst,omitempty"`
}

// RulesRequest asks for reconcile rules --apply on the node. Every field
// is checked before it becomes an argument.
type RulesRequest struct {
	Service          string `json:"service,omitempty"`
	KubeProxyVersion string `json:"kubeProxyVersion,omitempty"`
	IPTablesBackend  string `json:"iptablesBackend,omitempty"`
	// Backup is a file name in the agent's backup directory.
	Backup string `json:"backup,omitempty"`
	Force  bool   `json:"force,omitempty"`
}

// ConntrackRequest asks for reconcile conntrack --apply on the node: the
// agent deletes the stale entries it finds itself, nothing the caller
// names.
type ConntrackRequest struct{}

// args are the svctrace arguments of a conntrack request.
func (ConntrackRequest) args(node string) []string {
	return []string{"reconcile", "conntrack", "--local", "--node", node, "--apply", "-o", "json"}
}

// RollbackRequest asks for reconcile rollback of a backup file in the
// agent's backup directory.
type RollbackRequest struct {
	Backup string `json:"backup"`
}

// RunResult is the answer of a command the agent ran for the caller.
type RunResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// Status is the body of an answer that is not a success.
type Status struct {
	Message string `json:"message"`
}

var versionRE = regexp.MustCompile(`^v1\.[0-9]{1,3}\.[0-9]{1,3}$`)

// backendRE is the shape of a kernel backend's name (legacy, nf_tables).
var backendRE = regexp.MustCompile(`^[a-z][a-z_]{0,31}$`)

// args are the svctrace arguments of a node-state request.
func (r NodeStateRequest) args(node string) ([]string, string, error) {
	var stdin strings.Builder
	for _, s := range r.ConntrackDst {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, "", fmt.Errorf("conntrackDst %q is not an IP address", s)
		}
		stdin.WriteString(a.String())
		stdin.WriteByte('\n')
	}
	return []string{"node-state", "--node", node, "--conntrack-dst-stdin"}, stdin.String(), nil
}

// args are the svctrace arguments of a rules request of user, backups
// kept in dir.
func (r RulesRequest) args(node, dir, user string) ([]string, error) {
	args := []string{"reconcile", "rules", "--local", "--node", node, "--apply", "-o", "json", "--requested-by=" + user}
	if r.Service != "" {
		ns, name, ok := strings.Cut(r.Service, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
			return nil, fmt.Errorf("service %q is not namespace/name", r.Service)
		}
		args = append(args, "--service", r.Service)
	}
	if r.KubeProxyVersion != "" {
		if !versionRE.MatchString(r.KubeProxyVersion) {
			return nil, fmt.Errorf("kubeProxyVersion %q is not a version like v1.36.3", r.KubeProxyVersion)
		}
		args = append(args, "--kube-proxy-version", r.KubeProxyVersion)
	}
	switch {
	case r.IPTablesBackend == "":
	case backendRE.MatchString(r.IPTablesBackend):
		// The node's svctrace checks it against the backends its
		// planes declare.
		args = append(args, "--iptables-backend", r.IPTablesBackend)
	default:
		return nil, fmt.Errorf("iptablesBackend %q is not a backend's name", r.IPTablesBackend)
	}
	if r.Backup != "" {
		p, err := backupPath(dir, r.Backup)
		if err != nil {
			return nil, err
		}
		args = append(args, "--backup", p)
	}
	if r.Force {
		args = append(args, "--force")
	}
	return args, nil
}

// args are the svctrace arguments of a rollback request.
func (r RollbackRequest) args(node, dir string) ([]string, error) {
	p, err := backupPath(dir, r.Backup)
	if err != nil {
		return nil, err
	}
	return []string{"reconcile", "rollback", "--local", "--node", node, p}, nil
}

// backupPath is the path of a backup named name in dir: a plain file
// name, never a path that leaves the directory.
func backupPath(dir, name string) (string, error) {
	base := filepath.Base(name)
	if dir != "" && filepath.Dir(name) == filepath.Clean(dir) {
		name = base
	}
	if name == "" || name != base || name == "." || name == ".." || strings.ContainsAny(name, "\x00\n\r") {
		return "", fmt.Errorf("backup %q: give a file name in the agent's backup directory %s, not a path", name, dir)
	}
	if dir == "" {
		return "", fmt.Errorf("backup %q: the agent keeps no backup directory", name)
	}
	return filepath.Join(dir, name), nil
}
