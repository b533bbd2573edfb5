package nftables

import "errors"

// KernelSource names a ruleset read over netlink in notes and errors.
const KernelSource = "nf_tables (netlink)"

// ErrNotTranslated wraps the error of ReadNetlink when the kernel holds
// something the netlink reader does not translate into nft's terms (an
// expression it does not know, a register use nft would print otherwise):
// read that ruleset with `nft -j list ruleset` instead.
var ErrNotTranslated = errors.New("not translated from netlink")
