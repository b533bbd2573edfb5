//go:build linux

package nftables

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/mdlayher/netlink"
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
func ReadNetlink(netns int) (*Ruleset, error) { return readNetlink(netns, nil, nil) }

// ReadNetlinkCached is ReadNetlink for a caller that reads the same
// namespace again and again: the elements of the sets that cannot have
// changed since the last read with the cache are taken from it (see
// ElementCache), and the cache keeps this read's.
func ReadNetlinkCached(netns int, cache *ElementCache) (*Ruleset, error) {
	return readNetlink(netns, cache, nil)
}

// readNetlink is ReadNetlink, with a cache when set; meanwhile, when set,
// runs after each read's dumps, before the generation is checked (a test
// changes the ruleset there).
func readNetlink(netns int, cache *ElementCache, meanwhile func(attempt int)) (*Ruleset, error) {
	cfg := &netlink.Config{NetNS: netns}
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		return nil, fmt.Errorf("nftables: netlink: %w", err)
	}
	defer c.Close()
	// As nft does: the ruleset's generation before and after the dumps
	// tells whether a change (a kube-proxy sync) came in between; then
	// the parts read may not belong together, and the read starts over.
	for attempt := range readAttempts {
		before, err := generation(c)
		if err != nil {
			return nil, fmt.Errorf("nftables: netlink: %w", err)
		}
		k := kernelState{cfg: cfg, cache: cache}
		if err := k.read(c); err != nil {
			return nil, fmt.Errorf("nftables: reading over netlink: %w", err)
		}
		if meanwhile != nil {
			meanwhile(attempt)
		}
		after, err := generation(c)
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

// generation is the ruleset's generation ID, which every change moves.
func generation(c *netlink.Conn) (uint32, error) {
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETGEN), Flags: netlink.Request},
		Data:   []byte{unix.NFPROTO_UNSPEC, unix.NFNETLINK_V0, 0, 0},
	})
	if err != nil {
		return 0, fmt.Errorf("reading the ruleset's generation: %w", err)
	}
	for _, m := range msgs {
		_, b, err := body(m)
		if err != nil {
			return 0, err
		}
		for ad := attrsOf(b); ad.next(); {
			if ad.typ == unix.NFTA_GEN_ID {
				return ad.u32(), nil
			}
		}
	}
	return 0, fmt.Errorf("the kernel's reply holds no generation")
}

// kernelState is everything one read dumped.
type kernelState struct {
	cfg        *netlink.Config
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

func (k *kernelState) read(c *netlink.Conn) error {
	d, err := newDumper(c)
	if err != nil {
		return err
	}
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
		if err := d.dump(step.msg, unix.NFPROTO_UNSPEC, nil, step.add); err != nil {
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
func (k *kernelState) readElements(first *dumper) error {
	var sets []*kSet
	for i, s := range k.sets {
		if k.given == nil || !k.given[i] {
			sets = append(sets, s)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4, len(sets))
	conns := []*dumper{first}
	for len(conns) < workers {
		c, err := netlink.Dial(unix.NETLINK_NETFILTER, k.cfg)
		if err != nil {
			break
		}
		defer c.Close()
		d, err := newDumper(c)
		if err != nil {
			break
		}
		conns = append(conns, d)
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

func readSetElements(d *dumper, s *kSet) error {
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, s.table)
	ae.String(unix.NFTA_SET_ELEM_LIST_SET, s.name)
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	err = d.dump(unix.NFT_MSG_GETSETELEM, s.family, attrs, func(m netlink.Message) error {
		var err error
		s.elems, err = parseElems(m, s.elems)
		return err
	})
	if err != nil {
		return fmt.Errorf("reading the elements of set %s in table %s: %w", s.name, s.table, err)
	}
	return nil
}
