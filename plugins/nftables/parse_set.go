package nftables

import (
	"encoding/json"
	"fmt"
)

func (p *parser) set(body any, path string, isMap bool) error {
	m, t, name, err := p.named(body, path)
	if err != nil {
		return err
	}
	s := &Set{Name: name, IsMap: isMap}
	h, err := optInt(m, "handle", path)
	if err != nil {
		return err
	}
	s.Handle = int(h)
	if v, ok := m["type"]; ok {
		if s.KeyType, err = strList(v, path+".type"); err != nil {
			return err
		}
	}
	if v, ok := m["map"]; ok {
		if s.DataType, err = strList(v, path+".map"); err != nil {
			return err
		}
	}
	if s.Flags, err = strList(m["flags"], path+".flags"); err != nil {
		return err
	}
	if s.Timeout, err = optInt(m, "timeout", path); err != nil {
		return err
	}
	size, err := optInt(m, "size", path)
	if err != nil {
		return err
	}
	s.Size = int(size)
	if s.Comment, err = optStr(m, "comment", path); err != nil {
		return err
	}
	if v, ok := m["elem"]; ok && v != nil || p.elems != nil {
		if s.Elements, err = p.setElements(v, path, isMap, t.Family); err != nil {
			return err
		}
		if err := checkElements(s, path); err != nil {
			return fmt.Errorf("table %s: %w", t.ID(), err)
		}
	}
	if old := t.sets[name]; old != nil {
		p.note(t.Family, "%s: %s %s declared twice in table %s; the later one is used", path, kindName(isMap), name, t.ID())
		for i, x := range t.Sets {
			if x == old {
				t.Sets = append(t.Sets[:i:i], t.Sets[i+1:]...)
				break
			}
		}
	}
	t.sets[name] = s
	t.Sets = append(t.Sets, s)
	p.lastSet, p.lastTable = s, t
	return nil
}

// setElements reads the elements of a set or map: v, the value of its
// "elem", or those a narrow read took straight from the text (p.elems).
func (p *parser) setElements(v any, path string, isMap bool, fam string) ([]*Element, error) {
	if p.elems != nil {
		out := p.elems
		p.elems = nil
		return out, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s.elem: want an array, got %s", path, jsonType(v))
	}
	var out []*Element
	if len(list) > 0 {
		out = make([]*Element, 0, len(list))
	}
	for i, e := range list {
		el := p.plainElement(e, isMap, fam)
		if el == nil {
			var err error
			if el, err = p.element(e, fmt.Sprintf("%s.elem[%d]", path, i), isMap, fam); err != nil {
				return nil, err
			}
		}
		out = append(out, el)
	}
	return out, nil
}

func kindName(isMap bool) string {
	if isMap {
		return "map"
	}
	return "set"
}

// element reads a set element ("10.0.0.1", {"elem": {...}}, {"concat":
// [...]}) or a map element ([key, data]).
func (p *parser) element(v any, path string, isMap bool, fam string) (*Element, error) {
	el := &Element{}
	key := v
	if pair, ok := v.([]any); ok && len(pair) == 2 {
		key = pair[0]
		d, err := p.expr(pair[1], path+"[1]", fam)
		if err != nil {
			return nil, err
		}
		el.setData(d)
		path += "[0]"
	} else if isMap {
		return nil, fmt.Errorf("%s: a map element must be a [key, value] pair, got %s", path, jsonType(v))
	}
	if w, ok := key.(map[string]any); ok && len(w) == 1 && w["elem"] != nil {
		path += ".elem"
		em, err := asObject(w["elem"], path)
		if err != nil {
			return nil, err
		}
		if el.Comment, err = optStr(em, "comment", path); err != nil {
			return nil, err
		}
		if el.Timeout, err = optInt(em, "timeout", path); err != nil {
			return nil, err
		}
		if el.Expires, err = optInt(em, "expires", path); err != nil {
			return nil, err
		}
		val, ok := em["val"]
		if !ok {
			return nil, fmt.Errorf("%s: missing \"val\"", path)
		}
		key, path = val, path+".val"
	}
	k, err := p.expr(key, path, fam)
	if err != nil {
		return nil, err
	}
	el.Key = k
	return el, nil
}

// plainElement reads the elements sets and maps mostly hold without
// making their path: an address, a number, or a [key, verdict] pair of
// plain expressions (see plainExpr), which read without error or note (a
// map's element must be a pair).
// Others are nil: element reads them, naming the path.
func (p *parser) plainElement(v any, isMap bool, fam string) *Element {
	if scalar(v) && !isMap {
		k, _ := p.expr(v, "", fam)
		return &Element{Key: k}
	}
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 || !plainExpr(pair[0]) || !plainExpr(pair[1]) {
		return nil
	}
	el := &Element{}
	d, _ := p.expr(pair[1], "", fam)
	el.setData(d)
	el.Key, _ = p.expr(pair[0], "", fam)
	return el
}

// scalar: a string, a number or a boolean.
func scalar(v any) bool {
	switch v.(type) {
	case string, json.Number, bool:
		return true
	}
	return false
}

// plainExpr reports whether expr reads v without an error or a note: a
// scalar, a concatenation of scalars, a verdict.
func plainExpr(v any) bool {
	if scalar(v) {
		return true
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for kind, body := range m {
		switch kind {
		case "concat":
			list, ok := body.([]any)
			for _, e := range list {
				ok = ok && scalar(e)
			}
			return ok
		case "accept", "drop", "continue", "return":
			return true
		case "jump", "goto":
			b, ok := body.(map[string]any)
			_, target := b["target"].(string)
			return ok && target
		}
	}
	return false
}
