//go:build linux

package lab

import (
	"fmt"
	"strconv"
)

// newNetns creates a namespace and records it for teardown. The lock is held while creating,
// so that a concurrent teardown (signal) either sees the namespace or prevents it.
func (l *Lab) newNetns(role string) (string, error) {
	name := l.prefix + role
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", errTornDown
	}
	l.namespaces = append(l.namespaces, name)
	return name, addNetns(name)
}

func (l *Lab) setupNetwork(nodes int) error {
	if _, err := l.newNetns("net"); err != nil {
		return err
	}
	if err := ipn(l.netNS, "link", "add", "br0", "type", "bridge"); err != nil {
		return err
	}
	if err := ipn(l.netNS, "addr", "add", BridgeIP+"/24", "dev", "br0"); err != nil {
		return err
	}
	if err := ipn(l.netNS, "link", "set", "br0", "up"); err != nil {
		return err
	}
	if _, err := l.newNetns("cp"); err != nil {
		return err
	}
	if err := l.attach(l.cpNS, "cp", APIServerIP); err != nil {
		return err
	}
	for i := 1; i <= nodes; i++ {
		n := &Node{
			Name:      "node" + strconv.Itoa(i),
			Index:     i,
			IP:        fmt.Sprintf("192.0.2.%d", firstNodeIP+i-1),
			PodCIDR:   fmt.Sprintf("10.244.%d.0/24", i),
			nextPodIP: 10,
		}
		var err error
		if n.NetNS, err = l.newNetns(n.Name); err != nil {
			return err
		}
		if err := l.attach(n.NetNS, "n"+strconv.Itoa(i), n.IP); err != nil {
			return err
		}
		if err := sysctls(n.NetNS,
			"net.ipv4.ip_forward=1",
			"net.ipv4.conf.all.route_localnet=1",
			"net.ipv4.conf.all.rp_filter=0",
			"net.ipv4.conf.default.rp_filter=0",
		); err != nil {
			return err
		}
		if err := ipn(n.NetNS, "route", "add", "default", "via", BridgeIP); err != nil {
			return err
		}
		l.nodes = append(l.nodes, n)
	}
	// Every node routes the other nodes' pod CIDRs to them (what a CNI's host routes do).
	for _, n := range l.nodes {
		for _, o := range l.nodes {
			if o != n {
				if err := ipn(n.NetNS, "route", "add", o.PodCIDR, "via", o.IP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// attach connects namespace ns to the bridge with a veth pair: eth0 (ip/24) in ns, port in net.
func (l *Lab) attach(ns, port, ip string) error {
	if err := ipn(l.netNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
		return err
	}
	if err := ipn(l.netNS, "link", "set", port, "master", "br0", "up"); err != nil {
		return err
	}
	if err := ipn(ns, "addr", "add", ip+"/24", "dev", "eth0"); err != nil {
		return err
	}
	return ipn(ns, "link", "set", "eth0", "up")
}
