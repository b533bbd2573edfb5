// Package snapshot holds the Snapshot, the unit every svctrace command works
// on: the API objects of a cluster and the raw kernel state of its nodes, as
// captured at one time, with its file format (load, save, merge).
package snapshot

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// APIVersion and Kind identify a Snapshot document.
const (
	APIVersion = "svctrace.dev/v1alpha1"
	Kind       = "Snapshot"
)

// Snapshot is the API objects of a cluster and the raw kernel state of one
// or more of its nodes, as captured at one time.
type Snapshot struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Cluster is nil for a bare dump imported without API objects.
	Cluster *Cluster    `json:"cluster,omitempty"`
	Nodes   []NodeState `json:"nodes"`
}

// Metadata says where and when a snapshot was taken.
type Metadata struct {
	CreationTimestamp time.Time `json:"creationTimestamp"`
	// Source is how the snapshot was made: "live", "import", "local".
	Source string `json:"source"`
	// Generator is the svctrace version that wrote it.
	Generator string `json:"generator,omitempty"`
	// Notes are things a reader should know about the capture (a
	// forbidden list, an inferred setting).
	Notes []string `json:"notes,omitempty"`
}

// Cluster is the API objects kube-proxy acts on, plus Pods for the API-side
// checks of explain.
type Cluster struct {
	Nodes          []corev1.Node               `json:"nodes,omitempty"`
	Services       []corev1.Service            `json:"services,omitempty"`
	EndpointSlices []discoveryv1.EndpointSlice `json:"endpointSlices,omitempty"`
	Pods           []corev1.Pod                `json:"pods,omitempty"`
	// PodsListed is false when Pods could not be read (not captured,
	// forbidden): checks that need Pods are then skipped with a note.
	PodsListed bool `json:"podsListed"`
	// Endpoints are the v1 Endpoints objects: what kube-proxy before 1.19
	// read, and what a ticket pasting `kubectl get endpoints` holds.
	//lint:ignore SA1019 v1 Endpoints are read on purpose, for clusters and captures that have no EndpointSlices
	Endpoints []corev1.Endpoints `json:"endpoints,omitempty"`
	// EndpointsListed is false when Endpoints objects were not read (not
	// captured, forbidden), true when they were, even if none exist.
	EndpointsListed bool `json:"endpointsListed,omitempty"`
	// Partial is set when only the part of a binary snapshot that some
	// Services need was loaded (LoadPartial): it says which, and what the
	// whole file holds beyond them. Nil for a whole snapshot; never
	// written to a file.
	Partial *Partial `json:"-"`
}

// NodeState is the raw kernel state of one node with what is known about
// its kube-proxy.
type NodeState struct {
	Name       string    `json:"name"`
	CapturedAt time.Time `json:"capturedAt"`
	// Addresses are the node's own addresses (for addrtype LOCAL and
	// NodePorts); from the Node object or the kernel.
	Addresses []string    `json:"addresses,omitempty"`
	KubeProxy ProxyConfig `json:"kubeProxy"`
	// Dumps are collector outputs kept verbatim.
	Dumps []Dump `json:"dumps"`
}

// CollectorConntrack names a dump of the connection table, which belongs
// to no data plane: conntrack entries in the text form of conntrack -L -o
// extended (or /proc/net/nf_conntrack). Each plane names its own dumps
// (dataplane.Declarer).
const CollectorConntrack = "conntrack"

// Dump is one collector output, verbatim.
type Dump struct {
	// Collector names the kind of dump: conntrack, or a name a data plane
	// declares (iptables-save, ip6tables-save, nft-json, ipvsadm, ipset,
	// kube-ipvs0).
	Collector string `json:"collector"`
	// Family is IPv4 or IPv6 where it applies.
	Family string `json:"family,omitempty"`
	// Backend is nf_tables or legacy for iptables dumps.
	Backend string `json:"backend,omitempty"`
	// Origin says where the text came from (a file name, a command).
	Origin string `json:"origin,omitempty"`
	// Table is set when a headerless dump (iptables -S lines) was given
	// with an explicit table.
	Table string `json:"table,omitempty"`
	// Excerpt: the user gave the dump as an excerpt they cut, so a table
	// cut before its COMMIT ends where the text ends instead of being
	// refused as truncated.
	Excerpt bool   `json:"excerpt,omitempty"`
	Text    string `json:"text"`
	// Index is an index of Text made by the data plane that reads it
	// (when the snapshot was collected), opaque here: a narrowed read uses
	// it to skip what it does not need of Text. Only the binary format
	// keeps it; YAML and JSON are exports and drop it, and a reader
	// without it reads Text in full. An empty Index is none, and loads
	// as nil.
	Index []byte `json:"-"`
	// Parsed is Text as the data plane that reads it already holds it,
	// opaque here and kept in memory only (no format keeps it): a plane
	// that read the kernel's state into its own structures, and made Text
	// from them, hands them on, and its loader uses them instead of
	// reading Text again.
	Parsed any `json:"-"`
}

// ProxyConfig is what svctrace knows of the node's kube-proxy settings.
type ProxyConfig struct {
	// Mode is iptables, nftables or ipvs.
	Mode    string `json:"mode,omitempty"`
	Version string `json:"version,omitempty"`
	// ClusterCIDRs feed the ClusterCIDR local-traffic detector.
	ClusterCIDRs []string `json:"clusterCIDRs,omitempty"`
	// DetectLocalMode is ClusterCIDR (default), NodeCIDR, BridgeInterface
	// or InterfaceNamePrefix.
	DetectLocalMode string `json:"detectLocalMode,omitempty"`
	// BridgeInterface / InterfaceNamePrefix for those detector modes.
	BridgeInterface     string `json:"bridgeInterface,omitempty"`
	InterfaceNamePrefix string `json:"interfaceNamePrefix,omitempty"`
	// MasqueradeBit is the mark bit (default 14).
	MasqueradeBit *int32 `json:"masqueradeBit,omitempty"`
	MasqueradeAll bool   `json:"masqueradeAll,omitempty"`
	// NodePortAddresses: empty means all local addresses; "primary" or
	// CIDRs otherwise.
	NodePortAddresses  []string `json:"nodePortAddresses,omitempty"`
	LocalhostNodePorts *bool    `json:"localhostNodePorts,omitempty"`
	// Source is where these settings came from: configmap, configz, flags,
	// inferred.
	Source string `json:"source,omitempty"`
	// Inferred lists settings read off the rules rather than told, with
	// the evidence.
	Inferred []string `json:"inferred,omitempty"`
	// Sync is what kube-proxy said of its syncs when the node was read
	// (nil: not read, as from a dump).
	Sync *ProxySync `json:"sync,omitempty"`
}

// ProxySync is kube-proxy's own account of its syncs for one IP family:
// its metrics and its /healthz, read at ReadAt.
type ProxySync struct {
	ReadAt time.Time `json:"readAt"`
	// LastSync is when its last successful sync ended; LastQueued when
	// it last queued a change (zero: never).
	LastSync   time.Time `json:"lastSync,omitempty"`
	LastQueued time.Time `json:"lastQueued,omitempty"`
	// Healthz is the status code of its /healthz (0: not read): 503 once
	// a queued change has waited longer than twice its sync period, or
	// when the node is being deleted (NodeIneligible: it says so).
	Healthz        int  `json:"healthz,omitempty"`
	NodeIneligible bool `json:"nodeIneligible,omitempty"`
	// The syncs whose write to the kernel failed since it started.
	RestoreFailures        uint64 `json:"restoreFailures,omitempty"`
	PartialRestoreFailures uint64 `json:"partialRestoreFailures,omitempty"`
	NFTablesFailures       uint64 `json:"nftablesFailures,omitempty"`
}

// Node returns the node state with that name.
func (s *Snapshot) Node(name string) (*NodeState, bool) {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i], true
		}
	}
	return nil, false
}
