package iptables

import "github.com/svctrace/svctrace/model"

// Traits: iptables mode is the behaviour the expected table assumes;
// kube-proxy opens NodePorts on every local address when
// nodePortAddresses is unset.
func (Loader) Traits() model.ProxierTraits { return model.ProxierTraits{Mode: Loader{}.Mode()} }
