package nftables

// Expr is an nftables expression: a packet field, a literal, a set, a map
// lookup, a verdict (in map data). String formats it in nft syntax.
type Expr interface{ String() string }

// Stmt is one statement of a rule: a match, a verdict, an action.
type Stmt interface{ String() string }

// Literal is a constant: an address, a number, a protocol or type name.
type Literal struct {
	Text string
	// Num: the JSON held a number.
	Num bool
	// val is Text read as a value once, when parsed (known): a walk
	// evaluates the literals of its rules for every packet.
	val   value
	known bool
}

// newLiteral is a parsed literal, its value read.
func newLiteral(text string, num bool) *Literal {
	l := &Literal{Text: text, Num: num}
	l.val, l.known = literalValue(l), true
	return l
}

// Payload is a packet header field ("ip saddr", "th dport"); a raw
// payload (Base, Offset, Len) has no Protocol.
type Payload struct {
	Protocol, Field string
	Base            string
	Offset, Len     int
}

// Meta is "meta KEY" (l4proto, mark, iifname, ...).
type Meta struct{ Key string }

// CT is "ct [DIR] KEY" (state, status, mark, original ip daddr, ...).
type CT struct{ Key, Dir, Family string }

// Fib is "fib FLAGS RESULT" ("fib daddr type").
type Fib struct {
	Result string
	Flags  []string
}

// Numgen is "numgen MODE mod N [offset O]".
type Numgen struct {
	Mode        string
	Mod, Offset int
}

// Hash is "jhash EXPR mod N" or "symhash mod N".
type Hash struct {
	Kind        string
	Mod, Offset int
	Expr        Expr
}

// Concat is "a . b . c".
type Concat struct{ Parts []Expr }

// Prefix is "ADDR/LEN".
type Prefix struct {
	Addr Expr
	Len  int
}

// Range is "LO-HI".
type Range struct{ Lo, Hi Expr }

// SetRef is "@name", a named set or map.
type SetRef struct{ Name string }

// AnonSet is an anonymous set or map "{ a, b }" / "{ k : v, ... }".
type AnonSet struct{ Elems []*Element }

// List is a JSON array of values (flags: "ct state { established,
// related }").
type List struct{ Items []Expr }

// Binop is "LEFT OP RIGHT" with OP one of & | ^ << >>.
type Binop struct {
	Op          string
	Left, Right Expr
}

// MapLookup is "KEY map DATA": the value of a map element.
type MapLookup struct{ Key, Data Expr }

// Verdict is accept, drop, continue, return, jump CHAIN or goto CHAIN; a
// statement, and the data of a verdict map.
type Verdict struct{ Kind, Target string }

// Unknown is an expression or statement the parser does not understand,
// kept with its JSON and position.
type Unknown struct {
	Name, Raw, Path string
}

// Match is "LEFT [OP] RIGHT".
type Match struct {
	Op          string
	Left, Right Expr
}

// VMap is "KEY vmap DATA": a jump, goto or verdict from a verdict map.
type VMap struct{ Key, Data Expr }

// Mangle is "KEY set VALUE" ("meta mark set meta mark | 0x4000").
type Mangle struct{ Key, Value Expr }

// NAT is dnat, snat, masquerade or redirect.
type NAT struct {
	Kind string
	// Family is the address family given with "dnat ip to".
	Family     string
	Addr, Port Expr
	Flags      []string
}

// Reject is "reject [with TYPE CODE]".
type Reject struct{ Type, Code string }

// SetStmt is "add|update|delete @set { ELEM [timeout T] }", or the map form
// with Data.
type SetStmt struct {
	Op, Set string
	Elem    Expr
	Data    Expr
	Timeout int64
}

// CounterStmt is "counter" or "counter name NAME".
type CounterStmt struct{ Name string }

// Log is "log [prefix ...]".
type Log struct{ Prefix string }

// Notrack is "notrack": the packet bypasses conntrack (and NAT).
type Notrack struct{}

// Limit is "limit rate ...": assumed not exceeded by a first packet.
type Limit struct{ Text string }

// XT is an iptables-nft compatibility expression ("xt match comment"):
// nft cannot show its options.
type XT struct{ Type, Name string }
