package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// describeDecodeError explains why data does not decode into a value of
// type t, in the document's terms: the path of the field at fault
// (nodes[0].dumps) and what was expected there, never Go type names. err
// is the decoder's own error, used when no field can be blamed.
func describeDecodeError(data []byte, t reflect.Type, err error) error {
	j, yerr := yaml.YAMLToJSONStrict(data)
	if yerr != nil {
		return fmt.Errorf("not valid YAML: %s", cleanDecodeMessage(yerr))
	}
	var doc any
	if json.Unmarshal(j, &doc) == nil {
		if msg := fieldProblem(doc, t, ""); msg != "" {
			return errors.New(msg)
		}
	}
	return errors.New(cleanDecodeMessage(err))
}

// cleanDecodeMessage strips the layers the YAML and JSON decoders add and
// hides Go type names.
func cleanDecodeMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: ", "yaml: ", "unmarshal errors:\n"} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if strings.Contains(msg, "Go struct field") || strings.Contains(msg, "Go value of type") {
		return "a field holds a value of the wrong kind"
	}
	return msg
}

var (
	timeType       = reflect.TypeOf(time.Time{})
	metaTimeType   = reflect.TypeOf(metav1.Time{})
	unmarshalerTyp = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// fieldProblem finds the first value of v (decoded JSON) that a value of
// type t cannot hold, and says what and where; "" when none is found.
func fieldProblem(v any, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil {
		return ""
	}
	at := func(format string, args ...any) string {
		p := path
		if p == "" {
			p = "the document"
		}
		return p + ": " + fmt.Sprintf(format, args...)
	}
	if t == timeType || t == metaTimeType {
		s, ok := v.(string)
		if !ok {
			return at("want a time (RFC 3339, like 2026-01-02T15:04:05Z), got %s", valueKind(v))
		}
		if _, err := time.Parse(time.RFC3339, s); err != nil && s != "" {
			return at("want a time (RFC 3339, like 2026-01-02T15:04:05Z), got %q", s)
		}
		return ""
	}
	if reflect.PointerTo(t).Implements(unmarshalerTyp) {
		return "" // a type that reads several forms (int or string, quantities)
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return at("want an object (key: value), got %s", valueKind(v))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := jsonField(t, k)
			if !ok {
				return join(path, k) + ": unknown field"
			}
			if msg := fieldProblem(m[k], ft, join(path, k)); msg != "" {
				return msg
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return at("want an object (key: value), got %s", valueKind(v))
		}
		for k, e := range m {
			if msg := fieldProblem(e, t.Elem(), join(path, k)); msg != "" {
				return msg
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if _, ok := v.(string); !ok {
				return at("want base64 text, got %s", valueKind(v))
			}
			return ""
		}
		l, ok := v.([]any)
		if !ok {
			return at("want a list, got %s", valueKind(v))
		}
		for i, e := range l {
			if msg := fieldProblem(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return msg
			}
		}
	case reflect.String:
		switch v.(type) {
		case string, float64, bool: // a YAML scalar is read as text here
		default:
			return at("want a string, got %s", valueKind(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return at("want true or false, got %s", valueKind(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return at("want a whole number, got %s", valueKind(v))
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(float64); !ok {
			return at("want a number, got %s", valueKind(v))
		}
	}
	return ""
}

// jsonField returns the type of the field of struct t that the JSON key k
// fills, looking into embedded structs as encoding/json does.
func jsonField(t reflect.Type, k string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			if x, ok := jsonField(ft, k); ok {
				return x, true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == k || strings.EqualFold(name, k) {
			return f.Type, true
		}
	}
	return nil, false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// valueKind names the kind of a decoded JSON value for messages.
func valueKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("a string (%q)", shorten(x))
	case float64:
		return fmt.Sprintf("a number (%v)", x)
	case bool:
		return fmt.Sprintf("%v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a value"
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
