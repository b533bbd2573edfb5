package iptables

// The iptables plane's dumps, by their names in a snapshot
// (snapshot.Dump.Collector): iptables-save's and ip6tables-save's output.
const (
	CollectorSave  = "iptables-save"
	CollectorSave6 = "ip6tables-save"
)
