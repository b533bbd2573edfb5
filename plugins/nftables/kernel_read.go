//go:build linux

package nftables

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/mdlayher/netlink"
	"github.com/svctrace/svctrace/plugins/nftables/nfnetlink"
	"golang.org/x/sys/unix"
)

// ReadNetlink reads the nftables ruleset of the network namespace the
// calling thread is in, over netlink, as `nft -j list ruleset` would show
// it: every table, chain, set with its elements, rule and object. The
// elements of the sets are dumped on several sockets at once (the kernel
// finds a set by scanning its table's list of sets, so a table of many
// anonymous sets costs it most there). A ruleset holding something the
// reader does not translate gives an error wrapping ErrNotTranslated.
// netns, when not 0, is a file descriptor of the network namespace to
// read instead.
func ReadNetlink(netns int) (*Ruleset, error) {
	return readNetlink(nfnetlink.NetNS(netns), nil, nil)
}

// ReadNetlinkCached is ReadNetlink for a caller that reads the same
// namespace again and again: the elements of the sets that cannot have
// changed since the last read with the cache are taken from it (see
// ElementCache), and the cache keeps this read's.
func ReadNetlinkCached(netns int, cache *ElementCache) (*Ruleset, error) {
	return readNetlink(nfnetlink.NetNS(netns), cache, nil)
}

// readNetlink reads the ruleset over the sockets d opens (the kernel's,
// or a recording's), with a cache when set; meanwhile, when set, runs
// after each read's dumps, before the generation is checked (a test
// changes the ruleset there).
func readNetlink(d nfnetlink.Dialer, cache *ElementCache, meanwhile func(attempt int)) (*Ruleset, error) {
	c, err := nfnetlink.Dial(d)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	defer c.Close()
	// As nft does: the ruleset's generation before and after the dumps
	// tells whether a change (a kube-proxy sync) came in between; then
	// the parts read may not belong together, and the read starts over.
	for attempt := range readAttempts {
		before, err := c.Generation()
		if err != nil {
			return nil, fmt.Errorf("nftables: netlink: %w", err)
		}
		k := kernelState{dialer: d, cache: cache}
		if err := k.read(c); err != nil {
			return nil, fmt.Errorf("nftables: reading over netlink: %w", err)
		}
		if meanwhile != nil {
			meanwhile(attempt)
		}
		after, err := c.Generation()
		if err != nil {
			return nil, fmt.Errorf("nftables: netlink: %w", err)
		}
		if before == after {
			if cache != nil {
				cache.keep(&k)
			}
			return buildKernel(&k)
		}
	}
	return nil, fmt.Errorf("nftables: the ruleset changed during each of %d reads over netlink", readAttempts)
}

// readAttempts bounds the reads of a ruleset that keeps changing.
const readAttempts = 5

// kernelState is everything one read dumped.
type kernelState struct {
	dialer     nfnetlink.Dialer
	tables     []kTable
	chains     []kChain
	sets       []*kSet
	rules      []kRule
	objs       []kObj
	flowtables []kObj
	// cache, when set, gives the elements of the sets it holds (given
	// tells which), found by the handles of this read's tables and chains.
	cache   *ElementCache
	handles tableHandles
	given   []bool
}

func (k *kernelState) read(d *nfnetlink.Conn) error {
	for _, step := range []struct {
		what string
		msg  uint16
		add  func(netlink.Message) error
	}{
		{"tables", unix.NFT_MSG_GETTABLE, func(m netlink.Message) error {
			t, err := parseTable(m)
			k.tables = append(k.tables, t)
			return err
		}},
		{"chains", unix.NFT_MSG_GETCHAIN, func(m netlink.Message) error {
			ch, err := parseChain(m)
			k.chains = append(k.chains, ch)
			return err
		}},
		{"sets", unix.NFT_MSG_GETSET, func(m netlink.Message) error {
			s, err := parseSet(m)
			if s != nil {
				k.sets = append(k.sets, s)
			}
			return err
		}},
		{"rules", unix.NFT_MSG_GETRULE, func(m netlink.Message) error {
			r, err := parseRule(m)
			k.rules = append(k.rules, r)
			return err
		}},
		{"objects", unix.NFT_MSG_GETOBJ, func(m netlink.Message) error {
			o, err := parseObj(m)
			k.objs = append(k.objs, o)
			return err
		}},
		{"flowtables", unix.NFT_MSG_GETFLOWTABLE, func(m netlink.Message) error {
			o, err := parseFlowtable(m)
			k.flowtables = append(k.flowtables, o)
			return err
		}},
	} {
		if err := d.Dump(step.msg, unix.NFPROTO_UNSPEC, nil, step.add); err != nil {
			return fmt.Errorf("dumping %s: %w", step.what, err)
		}
	}
	if k.cache != nil {
		k.handles = handlesOf(k)
		k.given = k.cache.fill(k, k.handles)
	}
	return k.readElements(d)
}

// readElements dumps every set's elements, over as many sockets as CPUs
// (at most 4): each dump is one request, and the kernel's cost is the
// search for the set.
func (k *kernelState) readElements(first *nfnetlink.Conn) error {
	var sets []*kSet
	for i, s := range k.sets {
		if k.given == nil || !k.given[i] {
			sets = append(sets, s)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), k.dialer.Sockets(), len(sets))
	conns := []*nfnetlink.Conn{first}
	for len(conns) < workers {
		c, err := nfnetlink.Dial(k.dialer)
		if err != nil {
			break
		}
		defer c.Close()
		conns = append(conns, c)
	}
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for w, c := range conns {
		wg.Go(func() {
			for i := w; i < len(sets); i += len(conns) {
				if err := readSetElements(c, sets[i]); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func readSetElements(d *nfnetlink.Conn, s *kSet) error {
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, s.table)
	ae.String(unix.NFTA_SET_ELEM_LIST_SET, s.name)
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	err = d.Dump(unix.NFT_MSG_GETSETELEM, s.family, attrs, func(m netlink.Message) error {
		var err error
		s.elems, err = parseElems(m, s.elems)
		return err
	})
	if err != nil {
		return fmt.Errorf("reading the elements of set %s in table %s: %w", s.name, s.table, err)
	}
	return nil
}
