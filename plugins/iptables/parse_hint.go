package iptables

import "strings"

// nftTextHint says what a line of nft's text form (`nft list ruleset`)
// given as an iptables dump is, and what to give instead; "" for other
// lines.
func nftTextHint(line string) string {
	s := strings.TrimSpace(line)
	if !strings.HasSuffix(s, "{") {
		return ""
	}
	f := strings.Fields(s)
	switch {
	case len(f) == 4 && f[0] == "table" && f[2] == "kube-proxy",
		len(f) == 3 && f[0] == "chain" && f[1] != strings.ToUpper(f[1]):
		return "this is the text form of `nft list ruleset` with kube-proxy's nftables table (nftables mode), not an iptables dump: give it as the nftables ruleset (--nft-json, which reads the text form too)"
	case len(f) == 4 && f[0] == "table", len(f) == 3 && f[0] == "chain":
		// iptables-nft's chains are named in capitals (KUBE-SERVICES).
		return "this is the text form of `nft list ruleset`: these are iptables rules (iptables-nft backend) printed by nft; run `iptables-save` (and `ip6tables-save`) on the node and give that"
	}
	return ""
}
