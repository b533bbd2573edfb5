package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// nftItem is one object of an nft -j ruleset, with the edits on it.
type nftItem struct {
	raw     json.RawMessage
	kind    string // rule, chain, set, map, table, ...
	body    nftBody
	deleted bool
	after   []json.RawMessage
	elems   []*nftElem // of a set or map, once an edit touched them
}

type nftBody struct {
	Family string          `json:"family"`
	Table  string          `json:"table"`
	Chain  string          `json:"chain"`
	Name   string          `json:"name"`
	Handle *int            `json:"handle"`
	Elem   json.RawMessage `json:"elem"`
}

type nftElem struct {
	raw     json.RawMessage
	deleted bool
	after   []json.RawMessage
}

// nftAddress is what a - or = edit names in an nftables ruleset.
type nftAddress struct {
	what                string // rule, rules or element
	family, table, name string // name: the chain, or the set or map
	handle              int
	key                 string
}

func parseNFTAddress(e ruleEdit) (nftAddress, error) {
	f := strings.Fields(e.arg)
	bad := fmt.Errorf("%s: %q: want \"rule FAMILY TABLE CHAIN handle N\", \"rules FAMILY TABLE CHAIN\" or \"element FAMILY TABLE SET KEY\"", e.pos, e.arg)
	if e.regex != nil {
		return nftAddress{}, fmt.Errorf("%s: %s: an nftables ruleset is edited by address, not by regular expression", e.pos, e.op)
	}
	if len(f) < 4 {
		return nftAddress{}, bad
	}
	a := nftAddress{what: f[0], family: f[1], table: f[2], name: f[3]}
	switch {
	case a.what == "rule" && len(f) == 6 && f[4] == "handle":
		h, err := strconv.Atoi(f[5])
		if err != nil {
			return nftAddress{}, fmt.Errorf("%s: handle %q is not a number", e.pos, f[5])
		}
		a.handle = h
	case a.what == "rules" && len(f) == 4:
	case a.what == "element" && len(f) >= 5:
		a.key = strings.Join(f[4:], " ")
	default:
		return nftAddress{}, bad
	}
	return a, nil
}

// editNFT applies edits to an nft -j ruleset: rules are named by family,
// table, chain and handle, set and map elements by their key.
func editNFT(text string, edits []ruleEdit) (string, error) {
	var doc struct {
		Nftables []json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return "", fmt.Errorf("the nftables dump: %w", err)
	}
	items := make([]*nftItem, len(doc.Nftables))
	for i, raw := range doc.Nftables {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || len(obj) != 1 {
			return "", fmt.Errorf("the nftables dump: object %d is not {\"KIND\": {...}}", i)
		}
		it := &nftItem{raw: raw}
		for k, v := range obj {
			it.kind = k
			if err := json.Unmarshal(v, &it.body); err != nil {
				return "", fmt.Errorf("the nftables dump: object %d (%s): %w", i, k, err)
			}
		}
		items[i] = it
	}
	var cursorItem *nftItem
	var cursorElem *nftElem
	for _, e := range edits {
		if e.op == "+" {
			if !json.Valid([]byte(e.arg)) {
				return "", fmt.Errorf("%s: + %s: not JSON", e.pos, e.arg)
			}
			switch {
			case cursorElem != nil:
				cursorElem.after = append(cursorElem.after, json.RawMessage(e.arg))
			case cursorItem != nil:
				cursorItem.after = append(cursorItem.after, json.RawMessage(e.arg))
			default:
				return "", fmt.Errorf("%s: + needs a rule or element before it (- or =) to say where the new object goes", e.pos)
			}
			continue
		}
		a, err := parseNFTAddress(e)
		if err != nil {
			return "", err
		}
		del := e.op == "-"
		if a.what == "element" {
			el, err := findElement(items, a)
			if err != nil {
				return "", fmt.Errorf("%s: %w", e.pos, err)
			}
			el.deleted = el.deleted || del
			cursorItem, cursorElem = nil, el
			continue
		}
		var hits []*nftItem
		for _, it := range items {
			b := it.body
			if it.kind == "rule" && !it.deleted && b.Family == a.family && b.Table == a.table && b.Chain == a.name &&
				(a.what == "rules" || (b.Handle != nil && *b.Handle == a.handle)) {
				hits = append(hits, it)
			}
		}
		if len(hits) == 0 {
			return "", fmt.Errorf("%s: %s %s matches no rule of the dump", e.pos, e.op, e.arg)
		}
		if a.what == "rules" && e.op != "-" {
			return "", fmt.Errorf("%s: = names one rule (rule ... handle N), not all rules of a chain", e.pos)
		}
		for _, it := range hits {
			it.deleted = it.deleted || del
		}
		cursorItem, cursorElem = hits[len(hits)-1], nil
	}
	var out []string
	for _, it := range items {
		if !it.deleted {
			raw, err := it.encode()
			if err != nil {
				return "", err
			}
			out = append(out, string(raw))
		}
		for _, a := range it.after {
			out = append(out, string(a))
		}
	}
	return `{"nftables": [` + strings.Join(out, ", ") + "]}\n", nil
}

// findElement finds the one element of a set or map whose key reads key.
func findElement(items []*nftItem, a nftAddress) (*nftElem, error) {
	for _, it := range items {
		b := it.body
		if (it.kind != "set" && it.kind != "map") || b.Family != a.family || b.Table != a.table || b.Name != a.name {
			continue
		}
		if it.elems == nil {
			var raws []json.RawMessage
			if len(b.Elem) > 0 {
				if err := json.Unmarshal(b.Elem, &raws); err != nil {
					return nil, fmt.Errorf("%s %s %s %s: elements: %w", it.kind, b.Family, b.Table, b.Name, err)
				}
			}
			for _, r := range raws {
				it.elems = append(it.elems, &nftElem{raw: r})
			}
		}
		var keys []string
		for _, el := range it.elems {
			k, err := elementKey(el.raw, it.kind == "map")
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", it.kind, b.Name, err)
			}
			if k == a.key && !el.deleted {
				return el, nil
			}
			keys = append(keys, k)
		}
		return nil, fmt.Errorf("%s %s %s %s has no element %q (it has: %s)", it.kind, b.Family, b.Table, b.Name, a.key, strings.Join(keys, ", "))
	}
	return nil, fmt.Errorf("the dump has no set or map %s %s %s", a.family, a.table, a.name)
}

// elementKey writes an element's key as nft list ruleset does:
// 10.96.94.233 . tcp . 80, 10.0.0.0/8, 1-5.
func elementKey(raw json.RawMessage, isMap bool) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	if isMap {
		pair, ok := v.([]any)
		if !ok || len(pair) != 2 {
			return "", fmt.Errorf("map element %s is not [key, value]", raw)
		}
		v = pair[0]
	}
	return keyText(v), nil
}

func keyText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case map[string]any:
		if c, ok := x["concat"].([]any); ok {
			parts := make([]string, len(c))
			for i, p := range c {
				parts[i] = keyText(p)
			}
			return strings.Join(parts, " . ")
		}
		if el, ok := x["elem"].(map[string]any); ok {
			return keyText(el["val"])
		}
		if p, ok := x["prefix"].(map[string]any); ok {
			return keyText(p["addr"]) + "/" + keyText(p["len"])
		}
		if r, ok := x["range"].([]any); ok && len(r) == 2 {
			return keyText(r[0]) + "-" + keyText(r[1])
		}
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// encode writes the object back, with its elements as edited.
func (it *nftItem) encode() (json.RawMessage, error) {
	if it.elems == nil {
		return it.raw, nil
	}
	var obj map[string]map[string]json.RawMessage
	if err := json.Unmarshal(it.raw, &obj); err != nil {
		return nil, err
	}
	var elems []json.RawMessage
	for _, el := range it.elems {
		if !el.deleted {
			elems = append(elems, el.raw)
		}
		elems = append(elems, el.after...)
	}
	body := obj[it.kind]
	if len(elems) == 0 {
		delete(body, "elem")
	} else {
		data, err := json.Marshal(elems)
		if err != nil {
			return nil, err
		}
		body["elem"] = data
	}
	return json.Marshal(obj)
}
