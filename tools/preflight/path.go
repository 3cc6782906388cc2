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
// Get and Set walk the path text in place (nextStep): Get is on every preflight's hot path
// and allocates nothing unless it fails.
func Get(body any, path string) (v any, ok bool, err error) {
	if !wellFormed(path) {
		return nil, false, &PathError{path}
	}
	cur := body
	for i := 0; i < len(path); {
		if cur == nil {
			return nil, false, nil
		}
		key, index, next := nextStep(path, i)
		if key != "" {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return nil, false, &ShapeError{Path: strings.TrimSuffix(path[:i], "."), Want: "object", Got: kindOf(cur)}
			}
			if cur, ok = m[key]; !ok {
				return nil, false, nil
			}
		} else {
			switch node := cur.(type) {
			case []any:
				if index >= len(node) {
					return nil, false, nil
				}
				cur = node[index]
			case string:
				if index != 0 || next != len(path) {
					return nil, false, &ShapeError{Path: path[:i], Want: "array", Got: "string"}
				}
			default:
				return nil, false, &ShapeError{Path: path[:i], Want: "array", Got: kindOf(cur)}
			}
		}
		i = next
	}
	return cur, cur != nil, nil
}

// nextStep reads the step of a well-formed path that starts at i: an object key (a dot
// before it skipped), or a list index (key ""). next is where the following step starts.
// path[:i] is the path of the node the step is taken from.
func nextStep(path string, i int) (key string, index, next int) {
	if path[i] == '[' {
		end := i + strings.IndexByte(path[i:], ']')
		n, _ := strconv.Atoi(path[i+1 : end]) // wellFormed checked the digits
		return "", n, end + 1
	}
	if path[i] == '.' {
		i++
	}
	j := i
	for j < len(path) && path[j] != '.' && path[j] != '[' {
		j++
	}
	return path[i:j], -1, j
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
	if !wellFormed(path) {
		return false, &PathError{path}
	}
	var cur any = body
	var set func(any) // assigns into the container that holds cur; the first step is a key
	for i := 0; i < len(path); {
		key, index, next := nextStep(path, i)
		last := next == len(path)
		if key != "" {
			m, isMap := cur.(map[string]any)
			if !isMap {
				if !IsMissing(cur) {
					return false, &ShapeError{Path: strings.TrimSuffix(path[:i], "."), Want: "object", Got: kindOf(cur)}
				}
				m = map[string]any{}
				set(m)
			}
			if last {
				if !IsMissing(m[key]) {
					return false, nil
				}
				m[key] = value
				return true, nil
			}
			cur, set = m[key], func(v any) { m[key] = v }
			i = next
			continue
		}
		if str, isStr := cur.(string); isStr && !IsMissing(str) {
			if last && index == 0 {
				return false, nil // a string is its own first line: present
			}
			return false, &ShapeError{Path: path[:i], Want: "array", Got: "string"}
		}
		list, isList := cur.([]any)
		if !isList && !IsMissing(cur) {
			return false, &ShapeError{Path: path[:i], Want: "array", Got: kindOf(cur)}
		}
		for len(list) <= index {
			list = append(list, nil)
		}
		set(list)
		if last {
			if !IsMissing(list[index]) {
				return false, nil
			}
			list[index] = value
			return true, nil
		}
		cur, set = list[index], func(v any) { list[index] = v }
		i = next
	}
	return false, nil // unreachable: a well-formed path ends with a step that returns
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
