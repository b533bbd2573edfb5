package nftables

import "github.com/svctrace/svctrace/model"

// Traits: nftables mode opens NodePorts on the node's primary addresses
// when nodePortAddresses is unset; its interface match (iifname) does not
// match the node's own packets, which have no input interface; and v1.31
// to v1.33.5 check the node's own connections for endpoints before DNAT.
func (Loader) Traits() model.ProxierTraits {
	return model.ProxierTraits{
		Mode:                     Loader{}.Mode(),
		DefaultNodePortAddresses: []string{"primary"},
		InterfaceMatchSkipsNode:  true,
		EarlyEndpointCheck:       true,
	}
}
