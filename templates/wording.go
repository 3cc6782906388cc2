package templates

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/elicitd/elicitd/validator"
)

// wordingKeys are a field's keys an override may change: what the person reads.
var wordingKeys = []string{"label", "description", "placeholder"}

// WordingOnly returns a Builtin.Fits check that lets a file replace builtin only in its
// wording: the form's title, and each field's label, description, placeholder and option
// titles. The file must have every field of builtin (in any order) and no other, each with
// every other key as builtin has it (its type, required, options' values, pattern...), so
// that a tool that asks builtin's fields, and writes the answers where they belong, still
// can. Each difference is a problem of its own, naming its field; the fields missing are
// one problem of the form, naming them all.
func WordingOnly(builtin validator.Form) func(override validator.Form) error {
	want := map[string]validator.Field{}
	for _, f := range builtin.Fields {
		want[f.Name] = f
	}
	return func(override validator.Form) error {
		var ps []validator.Problem
		bad := func(field, format string, args ...any) {
			ps = append(ps, validator.Problem{Field: field, Message: fmt.Sprintf(format, args...)})
		}
		have := map[string]bool{}
		for _, o := range override.Fields {
			have[o.Name] = true
			b, ok := want[o.Name]
			if !ok {
				bad(o.Name, "is not a field of the built-in form; an override may only reword the built-in's fields, and adds none")
				continue
			}
			for _, msg := range fieldDifferences(b, o) {
				bad(o.Name, "%s", msg)
			}
		}
		var missing []string
		for _, b := range builtin.Fields {
			if !have[b.Name] {
				missing = append(missing, b.Name)
			}
		}
		switch {
		case len(missing) == 1:
			bad(missing[0], "is missing: the built-in form has it, and the tool asks for it; an override keeps every field and changes only wording")
		case len(missing) > 1:
			bad("form", "lacks %d of the built-in form's fields, which the tool asks for: %s; an override keeps every field and changes only wording",
				len(missing), strings.Join(missing, ", "))
		}
		if len(ps) == 0 {
			return nil
		}
		return &validator.DefinitionError{Problems: ps}
	}
}

// fieldDifferences says how override's field o differs from builtin's b in anything but
// wording.
func fieldDifferences(b, o validator.Field) []string {
	var out []string
	switch {
	case sameOptionValues(b.Options, o.Options):
	case len(b.Options) == 0:
		out = append(out, "has options, which the built-in does not; an override changes only wording (title, label, description, placeholder, option titles)")
	default:
		out = append(out, fmt.Sprintf("its options must have the built-in's values, %s (only their titles may change)", optionValues(b.Options)))
	}
	bm, om := keysOf(b), keysOf(o)
	for _, k := range slices.Sorted(maps.Keys(union(bm, om))) {
		if slices.Contains(wordingKeys, k) || k == "options" || reflect.DeepEqual(bm[k], om[k]) {
			continue
		}
		switch want, ok := bm[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("has %q, which the built-in does not; an override changes only wording (title, label, description, placeholder, option titles)", k))
		default:
			w, _ := json.Marshal(want)
			out = append(out, fmt.Sprintf("must keep %q as the built-in has it, %s; an override changes only wording (title, label, description, placeholder, option titles)", k, w))
		}
	}
	return out
}

// keysOf returns a field's keys as its JSON has them.
func keysOf(f validator.Field) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(f) // a field of a form that compiled
	_ = json.Unmarshal(b, &m)
	return m
}

func union(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func sameOptionValues(a, b []validator.Option) bool {
	if len(a) != len(b) {
		return false
	}
	values := map[string]bool{}
	for _, o := range a {
		values[o.Value] = true
	}
	for _, o := range b {
		if !values[o.Value] {
			return false
		}
	}
	return true
}

func optionValues(opts []validator.Option) string {
	vs := make([]string, len(opts))
	for i, o := range opts {
		vs[i] = o.Value
	}
	return strings.Join(vs, ", ")
}
