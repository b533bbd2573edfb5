// Package lab runs a real Kubernetes control plane (etcd, kube-apiserver) and real kube-proxy
// instances inside network namespaces, so svctrace can be tested against what kube-proxy
// really programs into the kernel. Linux and root only; see README.md.
//
// Every namespace is named svct-<pid>-<random>-<role> and is created by the lab; netfilter
// state and test traffic never touch the namespace the test starts in. Connections from the
// test process to the API server and to kube-proxy's metrics are made from inside the lab
// namespaces (a thread temporarily joins the namespace to create the socket).
package lab
