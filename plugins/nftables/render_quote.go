package nftables

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// notLocal is the detector's match of traffic that is not from a local
// pod; isLocal of traffic that is.
func (r *renderer) notLocal() []string {
	if r.s.LocalIface != "" {
		return []string{r.ifaceMatch() + " !=", r.quote(r.s.LocalIface)}
	}
	return []string{r.ipX, "saddr !=", r.s.LocalCIDR}
}

func (r *renderer) isLocal() []string {
	if r.s.LocalIface != "" {
		return []string{r.ifaceMatch(), r.quote(r.s.LocalIface)}
	}
	return []string{r.ipX, "saddr", r.s.LocalCIDR}
}

// ifaceMatch is how the local-traffic detector matches an interface:
// v1.31 and v1.32 by its index (iif), later releases by its name
// (iifname).
func (r *renderer) ifaceMatch() string {
	if r.s.beta() {
		return "iif"
	}
	return "iifname"
}

// checkName refuses an object name nft would not read as one word:
// kube-proxy's names are letters, digits and "-_./" (a Service port's
// "namespace/name/protocol/port"), starting with a letter.
func (r *renderer) checkName(name string) {
	ok := name != "" && len(name) < 256 && (name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z')
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./", c) >= 0
	}
	if !ok && r.err == nil {
		r.err = fmt.Errorf("object name %q is not a name nft reads as one: refusing to write it", name)
	}
}

// quote is nftString, keeping the first refusal in the renderer.
func (r *renderer) quote(s string) string {
	q, err := nftString(s)
	if err != nil && r.err == nil {
		r.err = err
	}
	return q
}

// maxNftString is the longest comment nft keeps (NFT_USERDATA_MAXLEN).
const maxNftString = 128

// nftString is a string as nft quotes it, in a listing and in a script:
// between double quotes, taken as they stand. nft has no escape in a
// quoted string, so one holding a quote cannot be written; nor can one
// with a control character (a newline ends the command), bytes that are
// not UTF-8, or more than nft keeps. Each is refused.
func nftString(s string) (string, error) {
	switch {
	case len(s) > maxNftString:
		return "", fmt.Errorf("string %q is longer than the %d bytes nft keeps: refusing to write it", s, maxNftString)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("string %q is not UTF-8: refusing to write it", s)
	case strings.ContainsRune(s, '"'):
		return "", fmt.Errorf("string %q holds a quote, which nft cannot quote: refusing to write it", s)
	case strings.IndexFunc(s, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0:
		return "", fmt.Errorf("string %q holds a control character: refusing to write it", s)
	}
	return `"` + s + `"`, nil
}
