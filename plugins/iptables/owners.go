package iptables

import (
	"fmt"
	"strings"
)

// Other components write iptables rules beside kube-proxy's, and some of
// them decide a Service's packets: a FORWARD policy of DROP, a
// firewall's REJECT, a hostPort's DNAT ahead of KUBE-SERVICES. The walk
// names such a verdict's rule, and its component where the chain's name
// tells it.

// chainOwners are chain name prefixes of well-known components, most
// specific first.
var chainOwners = []struct{ prefix, owner string }{
	{"DOCKER", "Docker"},
	{"CNI-HOSTPORT-", "the CNI portmap plugin, for a Pod's hostPort"},
	{"CNI-DN-", "the CNI portmap plugin, for a Pod's hostPort"},
	{"CNI-", "a CNI plugin"},
	{"FLANNEL-", "flannel"},
	{"cali-", "Calico"},
	{"CILIUM_", "Cilium"},
	{"WEAVE", "Weave Net"},
	{"ANTREA-", "Antrea"},
	{"AWS-", "the AWS VPC CNI"},
	{"OPENSHIFT-", "OpenShift SDN"},
	{"ISTIO_", "Istio"},
	{"LIBVIRT_", "libvirt"},
	{"f2b-", "fail2ban"},
	{"ufw-", "ufw"},
	{"ufw6-", "ufw"},
	{"IN_", "firewalld"},
	{"FWD_", "firewalld"},
	{"FWDI_", "firewalld"},
	{"FWDO_", "firewalld"},
	{"INPUT_direct", "firewalld"},
	{"FORWARD_direct", "firewalld"},
	{"OUTPUT_direct", "firewalld"},
	{"INPUT_ZONES", "firewalld"},
	{"FORWARD_IN_ZONES", "firewalld"},
	{"FORWARD_OUT_ZONES", "firewalld"},
}

// ChainOwner is the component a chain's name tells, "" when it tells none
// (a built-in chain, a chain written by hand).
func ChainOwner(chain string) string {
	for _, o := range chainOwners {
		if strings.HasPrefix(chain, o.prefix) {
			return o.owner
		}
	}
	return ""
}

// ruleOwner describes a rule that drops or rejects when it is not
// Kubernetes' own: every chain kube-proxy and the kubelet write is named
// KUBE-, and neither writes a verdict straight into a built-in chain.
// "" for theirs.
func ruleOwner(table, chain string, r *Rule) string {
	if strings.HasPrefix(chain, "KUBE-") {
		return ""
	}
	by := fmt.Sprintf("the rule %s/%s line %d (%s)", table, chain, r.Line, r.Raw)
	if r.Line == 0 {
		by = fmt.Sprintf("the rule %s/%s (%s)", table, chain, r.Raw)
	}
	if owner := ChainOwner(chain); owner != "" {
		by += " (" + owner + ")"
	}
	return by
}

// policyOwner describes a built-in chain's policy of DROP, and who likely
// set it: Docker sets FORWARD's policy to DROP when it starts (with
// ip_forward on), which the chains it writes beside it betray.
func (w *Walker) policyOwner(table, chain string) string {
	by := fmt.Sprintf("the policy DROP of %s/%s", table, chain)
	if table == "filter" && chain == "FORWARD" && w.rs.Chain("filter", "DOCKER") != nil {
		by += " (Docker sets it when it starts)"
	}
	return by
}
