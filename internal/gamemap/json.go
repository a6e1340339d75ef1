package gamemap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ParseLayout decodes a layout from JSON, as the API serves it or a
// designer edited it. It is strict, because a misspelt key silently read as
// zero would send a designer chasing problems that are not there: unknown
// keys, values of the wrong JSON type, trailing data and anything but one
// object are refused with an error naming the path (lanes[1].spawn.x) or
// the line and column. It checks only that the JSON fits the types;
// Analyze judges the layout.
func ParseLayout(data []byte) (MapLayout, error) {
	var l MapLayout
	if err := parseStrict(data, &l, "a layout", '{', `one JSON object like {"version":1,"size":"short",...}`); err != nil {
		return MapLayout{}, err
	}
	return l, nil
}

// ParsePlacements decodes a list of placements, like
// [{"kind":"trap","cell":{"x":5,"y":7}}], as strictly as ParseLayout.
func ParsePlacements(data []byte) ([]Placement, error) {
	var ps []Placement
	if err := parseStrict(data, &ps, "a list of placements", '[', `a JSON array like [{"kind":"trap","cell":{"x":5,"y":7}}]`); err != nil {
		return nil, err
	}
	if len(ps) > MaxPlacements {
		return nil, errTooManyPlacements(len(ps))
	}
	return ps, nil
}

// MaxPlacements bounds a list of placements to check or draw: far more
// structures than any level holds, so the work of one list stays small
// (a million placements once took 18 s and 1.4 GB to draw).
const MaxPlacements = 10_000

func errTooManyPlacements(n int) error {
	return fmt.Errorf("%d placements is more than the %d a list may hold", n, MaxPlacements)
}

// parseStrict decodes data into v (a pointer) strictly. what names the
// document in errors; open is the byte the document must start with;
// shape describes the document for people. encoding/json with unknown
// fields disallowed decides (quickly) what is accepted; only a refused
// document is walked again to say where and why in a designer's terms.
func parseStrict(data []byte, v any, what string, open byte, shape string) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return fmt.Errorf("the input is empty; %s is %s", what, shape)
	}
	if trimmed[0] != open {
		if _, err := decodeAny(data); err != nil {
			return err // broken JSON: say where first
		}
		return fmt.Errorf("the input holds %s, not %s; %s is %s", jsonKind(trimmed[0]), what, what, shape)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && !dec.More() {
		return nil
	}
	tree, explained := decodeAny(data)
	if explained == nil {
		explained = checkShape(tree, reflect.TypeOf(v).Elem(), "")
	}
	if explained != nil {
		return explained
	}
	return fmt.Errorf("decode %s: %w", what, err) // a refusal the shape check does not know
}

// decodeAny decodes one JSON value, reporting syntax errors and trailing
// data with their line and column.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	err := dec.Decode(&tree)
	if err == nil && dec.More() {
		off := int(dec.InputOffset())
		off += len(data[off:]) - len(bytes.TrimLeft(data[off:], " \t\r\n"))
		return nil, fmt.Errorf("%s: unexpected data after the JSON value", position(data, off))
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included.
		return nil, fmt.Errorf("%s: %s", position(data, int(syn.Offset)-1), strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s: the JSON ends too early (a truncated file?)", position(data, len(data)))
	case err != nil:
		return nil, err
	}
	return tree, nil
}

// position turns a byte offset into "line L, column C", both from 1.
func position(data []byte, off int) string {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

func jsonKind(first byte) string {
	switch first {
	case '{':
		return "a JSON object"
	case '[':
		return "a JSON array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// checkShape walks a decoded JSON value against the Go type it will be
// decoded into and returns the first mismatch, named by its path.
func checkShape(v any, t reflect.Type, path string) error {
	if v == nil {
		return nil // null leaves the zero value, as encoding/json does
	}
	want := func(kind string) error {
		return fmt.Errorf("%s: want %s, got %s", pathName(path), kind, describe(v))
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(v, t.Elem(), path)
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return want("an object")
		}
		return checkFields(obj, t, path)
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return want("an array")
		}
		for i, e := range arr {
			if err := checkShape(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return want("a string")
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, ok := v.(json.Number)
		if !ok {
			return want("an integer")
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return fmt.Errorf("%s: want an integer that fits %d bits, got %s", pathName(path), t.Bits(), n)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return want("true or false")
		}
	}
	return nil
}

// checkFields checks an object against a struct: every key must name a
// field (by its json tag), and every value must fit the field.
func checkFields(obj map[string]any, t reflect.Type, path string) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f, quoted, ok := fieldByJSONName(t, k)
		if !ok {
			return fmt.Errorf("%s: unknown field %q (known: %s)", pathName(path), k, strings.Join(jsonNames(t), ", "))
		}
		sub := joinPath(path, k)
		if quoted {
			s, isString := obj[k].(string)
			if obj[k] != nil && !isString {
				return fmt.Errorf("%s: want a decimal number in a string (like \"42\"), got %s", sub, describe(obj[k]))
			}
			if _, err := strconv.ParseUint(s, 10, 64); isString && err != nil {
				return fmt.Errorf("%s: want a decimal number from 0 to 18446744073709551615, got %q", sub, s)
			}
			continue
		}
		if err := checkShape(obj[k], f.Type, sub); err != nil {
			return err
		}
	}
	return nil
}

func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f, strings.Contains(opts, "string"), true
		}
	}
	return reflect.StructField{}, false, false
}

func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pathName(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func describe(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return "the number " + string(x)
	}
	return "null"
}
