package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/svctrace/svctrace/model"
	"github.com/svctrace/svctrace/snapshot"
)

// Repairer is a Loader whose plane svctrace can repair: it renders the
// complete state kube-proxy would program on a node, in the layout of the
// kube-proxy version there, compares it with the node's, and writes the
// difference to the kernel of the node it runs on. Only kube-proxy's own
// objects are read for the comparison and written; nothing of another
// component's is touched.
type Repairer interface {
	RepairPlanner
	// Backup reads from the kernel the state a plan would change.
	Backup(ctx context.Context, plan *RepairPlan) (BackupPart, error)
	// Write makes the plan's changes, worked out again against the
	// kernel as it is at that moment, and reads them back: a kernel that
	// does not then hold the render is an error. started, if set, is
	// called once the kernel write has begun.
	Write(ctx context.Context, plan *RepairPlan, started func()) (*RepairPlan, error)
	// Restore puts kube-proxy's part of a backup back, and reads it back.
	Restore(ctx context.Context, part BackupPart) (*RepairPlan, error)
}

// RepairPlanner is a Loader that renders the state kube-proxy would
// program and compares it with a node's: a dry run. A plane that can
// also write it is a Repairer.
type RepairPlanner interface {
	Loader
	// PlanRepair compares the node's state of one family with the
	// render; ok false when the node holds no state of this plane for
	// the family.
	PlanRepair(in RepairInput) (plan *RepairPlan, ok bool, err error)
}

// RepairInput is what a plan is made from.
type RepairInput struct {
	State  *snapshot.NodeState
	Family string
	// View is kube-proxy's view of the node; Config its settings as the
	// analysis knows them (told, or inferred from the rules).
	View   *model.NodeView
	Config snapshot.ProxyConfig
	// Version is the kube-proxy version whose layout to render.
	Version string
	// NodeIPs (primary first) and LocalAddrs are the node's addresses of
	// the family; PodCIDRs its Node object's spec.podCIDRs.
	NodeIPs, LocalAddrs, PodCIDRs []string
	// Service, "namespace/name", limits the plan to that Service's
	// objects.
	Service string
	// Backend is the plane's backend to write where it has several
	// (iptables: legacy or nf_tables); "" lets the plane pick the one
	// kube-proxy uses.
	Backend string
}

// RepairPlan is one family's repair.
type RepairPlan struct {
	Family  string `json:"family"`
	Backend string `json:"backend,omitempty"`
	// Changes are the differences, each as the operation that removes
	// it.
	Changes []Change `json:"changes,omitempty"`
	// Payload is what the plane writes to the kernel, in the form of its
	// tool (iptables-restore input, an nft transaction).
	Payload string `json:"payload,omitempty"`
	// Notes say which settings were assumed for want of being told.
	Notes []string `json:"notes,omitempty"`
	// Target is the plane's render, for Write.
	Target any `json:"-"`
	// Service is the plan's scope ("" for every Service).
	Service string `json:"-"`
	// Backup is the file the apply backed the node up to before Write,
	// for a plane to name where a write is to be undone from.
	Backup string `json:"-"`
}

// Change is one difference between kube-proxy's part of the kernel and
// the render, as the operation that removes it.
type Change struct {
	// Table is where the object lives (an iptables table, an nftables
	// table).
	Table string `json:"table"`
	// Object is the chain, set, map or virtual server changed.
	Object string `json:"object"`
	// Op is create, rewrite (its contents differ: written again), delete,
	// or edit (entries added to or removed from an object other Services
	// share).
	Op string `json:"op"`
	// Service is the Service port ("ns/name:port") the object or entries
	// belong to, when one does.
	Service string `json:"service,omitempty"`
	// Add and Remove are the entries written and removed, in the plane's
	// text (rules as its save tool prints them, set elements).
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
	// Endpoints are the endpoints ("ip:port") the change's entries send
	// to, when the plane can tell.
	Endpoints []string `json:"endpoints,omitempty"`
}

// BackupPart is one family's state in a backup, in the plane's own text.
type BackupPart struct {
	Mode    string `json:"mode"`
	Family  string `json:"family"`
	Backend string `json:"backend,omitempty"`
	Text    string `json:"text"`
}

// DetachedWriter is a Repairer whose writes run in a process of
// svctrace's own, started with DetachedWriteArgs, so that a stopped
// svctrace does not cut them short (its writes are many kernel
// operations, not one tool's transaction).
type DetachedWriter interface {
	Repairer
	// WriteDetached is that process's work: the job file its Write
	// wrote.
	WriteDetached(ctx context.Context, file string) error
}

// DetachedWriteArgs are the arguments that start svctrace's binary as the
// writing process of a mode.
func DetachedWriteArgs(mode, file string) []string {
	return []string{"reconcile", DetachedWriteCommand, mode, file}
}

// DetachedWriteCommand is the hidden reconcile subcommand of the writing
// process.
const DetachedWriteCommand = "write-detached"

// CIDROfFamily is the first CIDR of the family (IPv4, IPv6) in a list,
// masked; "" when there is none.
func CIDROfFamily(cidrs []string, family string) string {
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil && p.Addr().Is4() == (family != "IPv6") {
			return p.Masked().String()
		}
	}
	return ""
}

// CheckNodeAddrs refuses a node address a rendered rule could not hold as
// one address: anything netip does not read as an IP, or one with a zone.
func CheckNodeAddrs(nodeIP string, nodePortIPs []string) error {
	addrs := slices.Clone(nodePortIPs)
	if nodeIP != "" {
		addrs = append(addrs, nodeIP)
	}
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err != nil || ip.Zone() != "" {
			return fmt.Errorf("node address %q is not an IP address a rule can hold", a)
		}
	}
	return nil
}

// A PayloadNamer is a RepairPlanner that says what its plans' Payload is,
// for the heading it is printed under ("nft -f input").
type PayloadNamer interface {
	RepairPlanner
	PayloadForm() string
}
