// Package nftables is svctrace's data plane for kube-proxy's nftables
// mode: it parses `nft -j list ruleset`, walks packets through every base
// chain of a family in netfilter order, and reads kube-proxy's frontends,
// settings and leftovers off the state.
package nftables

// Ruleset is a parsed `nft -j list ruleset` (or `nft -j list table ...`).
// Every table is kept, also those of other components and of iptables-nft.
type Ruleset struct {
	// Source names the input (a file name) in errors and notes.
	Source string
	// Version is nft's version from the metainfo object ("" if absent).
	Version string
	// SchemaVersion is the JSON schema version from the metainfo object.
	SchemaVersion int
	Tables        []*Table
	// Notes are what the parser kept without understanding it.
	Notes []Note
}

// Note is something the parser could not fully understand. Family is the
// table's family when the note belongs to one table ("" otherwise).
type Note struct {
	Family string
	Text   string
	// at is the index of the element of the input the note is about, so
	// that notes of parts read late go in input order.
	at int
}

// Table is one nftables table.
type Table struct {
	Family, Name string
	Handle       int
	Comment      string
	Chains       []*Chain
	Sets         []*Set
	Counters     []*Counter
	// Objects are other stateful objects (quotas, limits, ct helpers,
	// flowtables, ...), kept by kind and name and not evaluated.
	Objects []Object
	chains  map[string]*Chain
	sets    map[string]*Set
	// lazy: some chains' rules are decoded on first use (LoadNarrow).
	lazy bool
}

// ID is the table as nft names it: "ip kube-proxy".
func (t *Table) ID() string { return t.Family + " " + t.Name }

// Chain returns the named chain, nil when the table has none.
func (t *Table) Chain(name string) *Chain { return t.chains[name] }

// Set returns the named set or map, nil when the table has none.
func (t *Table) Set(name string) *Set { return t.sets[name] }

// Chain is one chain; a base chain has a hook.
type Chain struct {
	Name    string
	Handle  int
	Comment string
	// Type (filter, nat, route), Hook, Prio and Policy are set for base
	// chains only.
	Type, Hook string
	Prio       int
	Policy     string
	// Rules are the chain's rules; in a narrow read (LoadNarrow) they are
	// decoded on first use: read them with rules().
	Rules []*Rule
	lazy  *lazyRules
}

// Base reports whether the chain is attached to a hook.
func (c *Chain) Base() bool { return c.Hook != "" }

// rules are the chain's rules, decoded first in a narrow read.
func (c *Chain) rules() []*Rule {
	if l := c.lazy; l != nil {
		l.once.Do(func() { l.doc.decodeRules(c) })
	}
	return c.Rules
}

// ruleCount is the number of the chain's rules, decoded or not.
func (c *Chain) ruleCount() int {
	if c.lazy != nil {
		return len(c.lazy.elems)
	}
	return len(c.Rules)
}

// chainsMaybe lists the chains whose rules may hold one of the marks: in
// a table read in full, all; in a narrow read, the chains whose undecoded
// rules have one (a rule with an escaped string has all) and those read
// already. A check over every rule that only rules with a mark can answer
// reads these alone, and answers as it would over all.
func (t *Table) chainsMaybe(m ruleMarks) []*Chain {
	if !t.lazy {
		return t.Chains
	}
	var out []*Chain
	for _, c := range t.Chains {
		if c.lazy == nil || c.lazy.marks&m != 0 {
			out = append(out, c)
		}
	}
	return out
}

// Rule is one rule: statements run left to right.
type Rule struct {
	Chain   string
	Handle  int
	Comment string
	Stmts   []Stmt
	// Path is the rule's position in the input ("nftables[17]").
	Path string
}

// Set is a named set or map.
type Set struct {
	Name   string
	Handle int
	// IsMap: declared as a map; DataType is then its value type
	// ("verdict", or the parts of a concatenation).
	IsMap    bool
	KeyType  []string
	DataType []string
	Flags    []string
	// Timeout is the default element timeout in seconds (0: none).
	Timeout  int64
	Size     int
	Comment  string
	Elements []*Element
	// index finds elements whose key parts are all exact values.
	index map[string]*Element
	// ranged are the other elements (prefixes, ranges, wildcards), or
	// every element when the key type is not known.
	ranged []*Element
}

// HasFlag reports whether the set was declared with flag f.
func (s *Set) HasFlag(f string) bool {
	for _, x := range s.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// Element is a set or map element.
type Element struct {
	Key Expr
	// Data is a map element's value (a Verdict for a verdict map); nil in
	// a set.
	Data    Expr
	Comment string
	// Timeout and Expires are in seconds (0: none).
	Timeout, Expires int64
	// data is Data as a value, read once when the element is parsed
	// (dataKnown): a walk looks a map's data up for every packet.
	data      value
	dataKnown bool
}

// setData sets a map element's data and reads its value once.
func (el *Element) setData(d Expr) {
	el.Data = d
	if _, verdict := d.(*Verdict); !verdict && d != nil {
		el.data, el.dataKnown = dataValue(d), true
	}
}

// dataValue is the value of the element's data.
func (el *Element) dataValue() value {
	if el.dataKnown {
		return el.data
	}
	return dataValue(el.Data)
}

// Counter is a named counter object.
type Counter struct {
	Name           string
	Handle         int
	Packets, Bytes int64
}

// Object is a stateful object the walker does not evaluate.
type Object struct {
	Kind, Name string
	Handle     int
}
