package iptables

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/svctrace/svctrace/model"
)

// Chain name prefixes kube-proxy uses for per-service chains.
const (
	PrefixSVC = "KUBE-SVC-"
	PrefixSVL = "KUBE-SVL-"
	PrefixEXT = "KUBE-EXT-"
	PrefixFW  = "KUBE-FW-"
	PrefixSEP = "KUBE-SEP-"
	// PrefixXLB is the external chain of a Local policy Service before
	// v1.24 (KUBE-EXT- since).
	PrefixXLB = "KUBE-XLB-"
)

// hash16 is kube-proxy's chain-name hash: the first 16 characters of the
// base32 encoding of the SHA-256 of the input.
func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// ServiceChainHash is the hash shared by the KUBE-SVC/SVL/EXT/FW chains of a
// service port: from the ServicePortName ("ns/name:port") and the lower-case
// protocol.
func ServiceChainHash(spn, protocol string) string {
	return hash16(spn + strings.ToLower(protocol))
}

// EndpointChain is the KUBE-SEP chain name of an endpoint ("ip:port") of a
// service port.
func EndpointChain(spn, protocol, endpoint string) string {
	return PrefixSEP + hash16(spn+strings.ToLower(protocol)+endpoint)
}

// SPNFromComment reads the ServicePortName out of one of kube-proxy's rule
// comments ("ns/name:port cluster IP", "ns/name:port -> 10.0.0.1:80",
// "masquerade traffic for ns/name:port external destinations", ...). Old
// releases wrote "ns/name:" for an unnamed port; that is returned as
// "ns/name".
func SPNFromComment(c string) (string, bool) {
	c = strings.TrimSpace(c)
	for _, p := range []string{"masquerade LOCAL traffic for ", "route LOCAL traffic for ", "pod traffic for ", "masquerade traffic for ", "other traffic to "} {
		if strings.HasPrefix(c, p) {
			c = strings.TrimPrefix(c, p)
			break
		}
	}
	word, _, _ := strings.Cut(c, " ")
	ns, rest, ok := strings.Cut(word, "/")
	if !ok || ns == "" || rest == "" || strings.Contains(rest, "/") || strings.HasPrefix(ns, "kubernetes") && !strings.Contains(word, ":") && strings.Contains(c, "kubernetes service") {
		return "", false
	}
	if !validName(ns) {
		return "", false
	}
	spn := model.ParseServicePortName(word)
	if !validName(spn.Name) {
		return "", false
	}
	return spn.String(), true
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
