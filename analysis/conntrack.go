package analysis

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/conntrack"
	"github.com/svctrace/svctrace/model"
)

// Flow is a conntrack entry to a Service frontend, with what it means.
type Flow struct {
	Entry    conntrack.Entry `json:"-"`
	Frontend behavior.Key    `json:"frontend"`
	Service  string          `json:"service"`
	Client   string          `json:"client"`
	// Backend is where the entry sends the client ("ip:port"); empty when
	// the entry is not translated (made while the Service had no
	// endpoints).
	Backend string `json:"backend,omitempty"`
	// Status: "ok", "stale", "draining" (TCP to a terminating endpoint),
	// "untranslated".
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Text   string `json:"entry"`
}

// Flow statuses.
const (
	FlowOK           = "ok"
	FlowStale        = "stale"
	FlowDraining     = "draining"
	FlowUntranslated = "untranslated"
	// FlowClosed: a TCP or SCTP connection that has ended (TIME_WAIT,
	// CLOSE, ...): its entry carries no more traffic.
	FlowClosed = "closed"
)

// CorrelateConntrack ties conntrack entries to the analysed node's Service
// frontends: which Service and backend each one serves, and whether that
// backend is still valid (a serving endpoint the node's rules send new
// connections to). Entries to other destinations are ignored.
func (a *NodeAnalysis) CorrelateConntrack(entries []conntrack.Entry) []Flow {
	if a.Expected == nil {
		return nil
	}
	idx := newFrontendIndex(a.Expected.Frontends, a.NodeIPs)
	var out []Flow
	for _, e := range entries {
		f, ok := idx.lookup(e)
		if !ok {
			continue
		}
		out = append(out, a.judge(e, f))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Client < out[j].Client
	})
	return out
}

// frontendIndex finds the frontend an entry's original destination is:
// an address frontend, or a NodePort on one of the node's addresses.
type frontendIndex struct {
	byAddr     map[addrKey]*behavior.Frontend
	byNodePort map[addrKey]*behavior.Frontend // Addr unset: any local address
	local      map[netip.Addr]bool
}

type addrKey struct {
	addr  netip.Addr
	port  uint16
	proto string
}

func newFrontendIndex(fs []behavior.Frontend, nodeIPs []netip.Addr) *frontendIndex {
	idx := &frontendIndex{byAddr: map[addrKey]*behavior.Frontend{}, byNodePort: map[addrKey]*behavior.Frontend{}, local: map[netip.Addr]bool{}}
	for _, ip := range nodeIPs {
		idx.local[ip] = true
	}
	for i := range fs {
		f := &fs[i]
		k := f.Key
		if k.Kind == behavior.NodePort && k.IP == "" {
			idx.byNodePort[addrKey{port: uint16(k.Port), proto: k.Protocol}] = f
			continue
		}
		if ip, err := netip.ParseAddr(k.IP); err == nil {
			idx.byAddr[addrKey{ip, uint16(k.Port), k.Protocol}] = f
		}
	}
	return idx
}

func (idx *frontendIndex) lookup(e conntrack.Entry) (*behavior.Frontend, bool) {
	proto := strings.ToUpper(e.Protocol)
	if f, ok := idx.byAddr[addrKey{e.Orig.Dst, e.Orig.DstPort, proto}]; ok {
		return f, true
	}
	if idx.local[e.Orig.Dst] || e.Orig.Dst.IsLoopback() {
		f, ok := idx.byNodePort[addrKey{port: e.Orig.DstPort, proto: proto}]
		return f, ok
	}
	return nil, false
}

func (a *NodeAnalysis) judge(e conntrack.Entry, f *behavior.Frontend) (fl Flow) {
	fl = Flow{Entry: e, Frontend: f.Key, Service: f.Service, Client: netip.AddrPortFrom(e.Orig.Src, e.Orig.SrcPort).String()}
	defer func() {
		// Reports quote the entries that need attention.
		if fl.Status != FlowOK && fl.Status != FlowClosed {
			fl.Text = describeEntry(e)
		}
	}()
	if e.Reply.Src == e.Orig.Dst && e.Reply.SrcPort == e.Orig.DstPort {
		fl.Status = FlowUntranslated
		if strings.EqualFold(e.Protocol, "udp") {
			// The client's packets keep the entry alive and bypass the
			// Service's rules: no backend, and no reject either.
			fl.Status = FlowStale
			fl.Reason = "not translated: made while the Service had no endpoints, and kept alive by the client's packets, which reach no backend and get no reject"
			if forwardsAny(f) {
				fl.Reason = "not translated: made while the Service had no endpoints, and kept alive by the client's packets, so they miss the endpoints it has now"
			}
		}
		return fl
	}
	fl.Backend = netip.AddrPortFrom(e.Reply.Src, e.Reply.SrcPort).String()
	if !live(e) {
		fl.Status = FlowClosed
		return fl
	}
	ep, inAPI := a.endpoint(f.Service, f.Key.Protocol, fl.Backend)
	_, inRules := a.observedBackend(f.Key, fl.Backend)
	switch {
	case inAPI && ep.Serving && ep.Terminating:
		// kube-proxy keeps flows to serving endpoints, terminating or
		// not: they drain.
		fl.Status, fl.Reason = FlowDraining, "the endpoint is terminating but still serving"
	case inAPI && ep.Serving && inRules:
		fl.Status = FlowOK
	case inAPI && ep.Serving:
		fl.Status, fl.Reason = FlowStale, reasonRulesMoved
	case inAPI && ep.Terminating && !strings.EqualFold(e.Protocol, "udp"):
		// TCP and SCTP flows to a terminating endpoint drain by
		// themselves; kube-proxy never flushes them.
		fl.Status, fl.Reason = FlowDraining, "the endpoint is terminating and no longer serving; the connection drains"
	case inAPI:
		fl.Status, fl.Reason = FlowStale, "the endpoint is not serving"
	default:
		fl.Status, fl.Reason = FlowStale, fmt.Sprintf("%s is no endpoint of %s any more", fl.Backend, f.Service)
	}
	return fl
}

func forwardsAny(f *behavior.Frontend) bool {
	for _, o := range f.Outcomes {
		if o.Verdict == behavior.Forward {
			return true
		}
	}
	return false
}

// endpoint finds a backend among the Service port's endpoints in the API.
func (a *NodeAnalysis) endpoint(spn, proto, backend string) (model.Endpoint, bool) {
	sp, ok := a.View.FindPort(spn, proto)
	if !ok {
		return model.Endpoint{}, false
	}
	for _, e := range sp.Endpoints {
		if e.String() == backend {
			return e, true
		}
	}
	return model.Endpoint{}, false
}

func (a *NodeAnalysis) observedBackend(k behavior.Key, backend string) (behavior.Backend, bool) {
	f, ok := a.Observed.Find(k)
	if !ok {
		return behavior.Backend{}, false
	}
	for _, o := range f.Outcomes {
		for _, b := range o.Backends {
			if b.Endpoint == backend {
				return b, true
			}
		}
	}
	return behavior.Backend{}, false
}

// ConntrackFindings turns stale flows into StaleConntrack findings, one per
// reasonRulesMoved is why a flow to a serving endpoint is stale: the
// node's rules changed under it. Where they lost a frontend's rules,
// that loss is the cause (foldUnderJumps).
const reasonRulesMoved = "the endpoint is serving, but the node's rules no longer send new connections to it"

// entry (each names its client).
func ConntrackFindings(node string, flows []Flow) []behavior.Finding {
	var out []behavior.Finding
	for _, f := range flows {
		if f.Status != FlowStale {
			continue
		}
		backend := f.Backend
		if backend == "" {
			backend = "no backend (untranslated)"
		}
		out = append(out, behavior.Finding{
			Type: behavior.StaleConntrack, Node: node, Service: f.Service, Frontends: []string{f.Frontend.String()},
			Expected: "a serving endpoint of " + f.Service,
			Observed: fmt.Sprintf("%s from client %s to %s", strings.ToLower(f.Entry.Protocol), f.Client, backend),
			Rules:    []string{f.Text}, Endpoint: f.Backend,
			Message: fmt.Sprintf("conntrack keeps client %s of %s on %s: %s", f.Client, f.Service, backend, f.Reason),
		})
	}
	return out
}

// describeEntry describes an entry for reports: protocol, state, tuples,
// timeout and counters.
func describeEntry(e conntrack.Entry) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(e.Protocol))
	if e.State != "" {
		b.WriteString(" " + e.State)
	}
	fmt.Fprintf(&b, " %s -> %s", netip.AddrPortFrom(e.Orig.Src, e.Orig.SrcPort), netip.AddrPortFrom(e.Orig.Dst, e.Orig.DstPort))
	fmt.Fprintf(&b, " reply from %s", netip.AddrPortFrom(e.Reply.Src, e.Reply.SrcPort))
	b.WriteString(" timeout " + strconv.FormatUint(uint64(e.Timeout), 10) + "s")
	if e.Accounting {
		fmt.Fprintf(&b, " packets %d/%d", e.OrigPackets, e.ReplyPackets)
	}
	var flags []string
	if e.Assured {
		flags = append(flags, "ASSURED")
	}
	if e.Unreplied {
		flags = append(flags, "UNREPLIED")
	}
	if len(flags) > 0 {
		b.WriteString(" [" + strings.Join(flags, ",") + "]")
	}
	return b.String()
}

// live reports whether an entry can still carry a client's packets: UDP
// entries always (until they time out); TCP and SCTP ones while the
// connection is being opened or is open.
func live(e conntrack.Entry) bool {
	switch strings.ToLower(e.Protocol) {
	case "tcp":
		switch e.State {
		case "ESTABLISHED", "SYN_SENT", "SYN_RECV", "SYN_SENT2", "":
			return true
		}
		return false
	case "sctp":
		switch e.State {
		case "ESTABLISHED", "COOKIE_WAIT", "COOKIE_ECHOED", "":
			return true
		}
		return false
	}
	return true
}
