// Package inspect fills a snapshot.Snapshot from where a node's state
// lives: the API server (Services, EndpointSlices, Nodes, Pods, kube-proxy's
// ConfigMap, through client-go), the kernel of the node the process runs on
// (each plane's dump tools, or its own netlink reader), files a user brings
// (iptables-save, nft, ipvsadm, ipset and conntrack output, imported with
// their format checked), and other nodes read through their svctrace agent
// (or a helper Pod). It also reads what kube-proxy says of itself (/configz,
// /metrics, /healthz) and watches Services and EndpointSlices for the
// agent and the TUI. It decides nothing about drift: analysis does.
package inspect
