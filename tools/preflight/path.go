// Package preflight finds what a nested JSON request body is missing, asks for exactly that
// through one flat form, and writes the answers back where they belong.
//
// A Rule names a value by its dot path (Shipper.Address.AddressLine[0]) and by the flat key
// its form field uses (shipper_address_line_1). A value is missing when it is absent, null,
// an empty or whitespace-only string, or an empty object or list; 0 and false are present.
// Bodies are plain JSON values (map[string]any, []any, string, float64, bool, nil), as
// encoding/json decodes them. Nothing here mutates a caller's body: work on Clone.
package preflight

import (
	"fmt"
	"strconv"
	"strings"
)

// segment is one step of a path: an object key, or an index into a list.
type segment struct {
	key   string
	index int // -1 for a key step
}

// ShapeError says a body has the wrong kind of value at a path: a string where an object
// belongs, say. It is a malformed request, never a missing field.
type ShapeError struct {
	Path string // the dot path of the node that has the wrong kind
	Want string // "object" or "list"
	Got  string // the kind found
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("%s must be %s, not %s", e.Path, article(e.Want), article(e.Got))
}

func article(kind string) string {
	switch kind {
	case "object", "array":
		return "an " + kind
	}
	return "a " + kind
}

// PathError is a malformed dot path in a rule (a programming error in a rule set).
type PathError struct{ Path string }

func (e *PathError) Error() string { return fmt.Sprintf("preflight: malformed path %q", e.Path) }

func parsePath(path string) ([]segment, error) {
	if path == "" {
		return nil, &PathError{path}
	}
	var segs []segment
	for part := range strings.SplitSeq(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" {
			return nil, &PathError{path}
		}
		segs = append(segs, segment{key: name, index: -1})
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i < 0 {
				return nil, &PathError{path}
			}
			segs = append(segs, segment{index: i})
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, &PathError{path}
			}
		}
	}
	return segs, nil
}

func render(segs []segment) string {
	var b strings.Builder
	for i, s := range segs {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	default:
		return "number"
	}
}

// Get returns the value at path. ok is false when some step is absent (or null). A step into
// a node of the wrong kind is a *ShapeError, with one allowance: index 0 of a string is the
// string itself, so an AddressLine given as a string is its own first line.
//
// Get walks the path text in place: it is on every preflight's hot path and allocates nothing
// unless it fails.
func Get(body any, path string) (v any, ok bool, err error) {
	if !wellFormed(path) {
		return nil, false, &PathError{path}
	}
	cur := body
	for i := 0; i < len(path); {
		if cur == nil {
			return nil, false, nil
		}
		if path[i] == '[' {
			end := i + strings.IndexByte(path[i:], ']')
			n, _ := strconv.Atoi(path[i+1 : end]) // wellFormed checked it
			switch node := cur.(type) {
			case []any:
				if n >= len(node) {
					return nil, false, nil
				}
				cur = node[n]
			case string:
				if n != 0 || end != len(path)-1 {
					return nil, false, &ShapeError{Path: path[:i], Want: "array", Got: "string"}
				}
			default:
				return nil, false, &ShapeError{Path: path[:i], Want: "array", Got: kindOf(cur)}
			}
			i = end + 1
			continue
		}
		if path[i] == '.' {
			i++
		}
		j := i
		for j < len(path) && path[j] != '.' && path[j] != '[' {
			j++
		}
		m, isMap := cur.(map[string]any)
		if !isMap {
			return nil, false, &ShapeError{Path: strings.TrimSuffix(path[:i], "."), Want: "object", Got: kindOf(cur)}
		}
		if cur, ok = m[path[i:j]]; !ok {
			return nil, false, nil
		}
		i = j
	}
	return cur, cur != nil, nil
}

// wellFormed reports whether path is keys separated by dots, each followed by any number of
// [index] steps, without allocating.
func wellFormed(path string) bool {
	if path == "" {
		return false
	}
	for i := 0; i < len(path); {
		j := i
		for j < len(path) && path[j] != '.' && path[j] != '[' && path[j] != ']' {
			j++
		}
		if j == i {
			return false // an empty key
		}
		i = j
		for i < len(path) && path[i] == '[' {
			k := i + 1
			for k < len(path) && path[k] >= '0' && path[k] <= '9' {
				k++
			}
			if k == i+1 || k >= len(path) || path[k] != ']' {
				return false
			}
			i = k + 1
		}
		if i < len(path) {
			if path[i] != '.' || i == len(path)-1 {
				return false
			}
			i++
		}
	}
	return true
}

// IsMissing reports whether v counts as not given.
func IsMissing(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// Set writes value at path in body, creating objects and list items on the way, and never
// replacing a value that is present (it reports whether it wrote). body must be an object.
// A step through a node of the wrong kind is a *ShapeError.
func Set(body map[string]any, path string, value any) (bool, error) {
	segs, err := parsePath(path)
	if err != nil {
		return false, err
	}
	var cur any = body
	// set assigns into the container that holds the current node.
	var set func(any)
	for i, s := range segs {
		last := i == len(segs)-1
		if s.index < 0 {
			m, isMap := cur.(map[string]any)
			if !isMap {
				if !IsMissing(cur) {
					return false, &ShapeError{Path: render(segs[:i]), Want: "object", Got: kindOf(cur)}
				}
				m = map[string]any{}
				set(m)
			}
			if last {
				if !IsMissing(m[s.key]) {
					return false, nil
				}
				m[s.key] = value
				return true, nil
			}
			key := s.key
			cur, set = m[key], func(v any) { m[key] = v }
			continue
		}
		if str, isStr := cur.(string); isStr && !IsMissing(str) {
			if last && s.index == 0 {
				return false, nil // a string is its own first line: present
			}
			return false, &ShapeError{Path: render(segs[:i]), Want: "array", Got: "string"}
		}
		list, isList := cur.([]any)
		if !isList {
			if !IsMissing(cur) {
				return false, &ShapeError{Path: render(segs[:i]), Want: "array", Got: kindOf(cur)}
			}
			list = nil
		}
		for len(list) <= s.index {
			list = append(list, nil)
		}
		set(list)
		if last {
			if !IsMissing(list[s.index]) {
				return false, nil
			}
			list[s.index] = value
			return true, nil
		}
		idx, l := s.index, list
		cur, set = list[idx], func(v any) { l[idx] = v }
	}
	return false, nil // unreachable: the loop returns at the last segment
}

// Clone deep-copies a JSON value, so a body can be completed without touching the caller's.
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Clone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = Clone(e)
		}
		return l
	}
	return v
}
