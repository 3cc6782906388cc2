package validator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// Compiled is a checked form: it builds the MCP wire schema and validates answers. It is
// immutable and safe for concurrent use; it satisfies package elicitation's CompiledForm
// and Keeper interfaces.
type Compiled struct {
	title    string
	fields   []compiledField
	maxBytes int
	wire     json.RawMessage              // the fields asked now, as the MCP schema
	hints    map[string]map[string]string // their rendering hints; nil when none
	checks   bool                         // some field has a custom Check

	rules       bool // some field has RequiredWhen or Compare
	conditional bool // some field has When
}

type compiledField struct {
	Field
	label   string
	re      *regexp.Regexp
	prog    int // the pattern's program size, in instructions
	schemes []string
	def     any               // the normalised default, or nil
	titled  bool              // some option has a title
	byValue map[string]string // option value -> value, for choice fields
	byFold  map[string]string // folded value or title -> value of the first option it names

	// Set on the forms Keep returns: the field was answered validly before and is not asked
	// again; keptValue (nil when it was left blank) stands for its answer.
	kept      bool
	keptValue any
	stage     int8 // stageAsk, stagePending or stageDropped (rules.go)
}

// Problem is one thing wrong with a form definition.
type Problem struct {
	Field   string `json:"field"` // the field's name, or "fields[i]" when it has none
	Message string `json:"message"`
}

// DefinitionError lists every problem Compile found in a form definition.
type DefinitionError struct {
	Problems []Problem
}

func (e *DefinitionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid form definition (%d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteByte('s')
	}
	b.WriteString(")")
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "; %s: %s", p.Field, p.Message)
	}
	return b.String()
}

var allTypes = []Type{Text, Number, Integer, Boolean, Date, DateTime, Email, URL, Select, MultiSelect, File}

func typeList() string {
	names := make([]string, len(allTypes))
	for i, t := range allTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

func (t Type) known() bool     { return slices.Contains(allTypes, t) }
func (t Type) stringy() bool   { return t == Text || t == Email || t == URL }
func (t Type) numeric() bool   { return t == Number || t == Integer }
func (t Type) choice() bool    { return t == Select || t == MultiSelect }
func (t Type) caseAware() bool { return t.stringy() || t.choice() }

// Compile checks f and returns its compiled form, or a *DefinitionError listing every problem
// found (not only the first). Compile copies what it keeps: later changes to f do not reach
// the compiled form.
func Compile(f Form) (*Compiled, error) {
	c := &Compiled{title: f.Title, maxBytes: f.MaxAnswerBytes}
	if c.maxBytes == 0 {
		c.maxBytes = DefaultMaxAnswerBytes
	}
	var problems []Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if f.MaxAnswerBytes < 0 {
		add("form", "max answer size must be positive, got %d", f.MaxAnswerBytes)
	}
	if len(f.Fields) == 0 {
		add("form", "has no fields; a form needs at least one")
	}
	if len(f.Fields) > MaxFields {
		add("form", "has %d fields; the limit is %d", len(f.Fields), MaxFields)
		return nil, &DefinitionError{Problems: problems} // nothing more is compiled
	}
	seen := map[string]bool{}
	patternCost := 0
	for i, fd := range f.Fields {
		key := fd.Name
		if key == "" {
			key = fmt.Sprintf("fields[%d]", i)
			add(key, "has no name; every field needs a non-empty name")
		} else if seen[key] {
			add(key, "is defined twice; field names must be unique")
		}
		seen[fd.Name] = true
		cf, fieldProblems := compileField(fd)
		for _, msg := range fieldProblems {
			add(key, "%s", msg)
		}
		c.checks = c.checks || fd.Check != nil
		c.fields = append(c.fields, cf)
		if cf.re != nil {
			patternCost += cf.prog * *cf.MaxLength
		}
	}
	c.compileRules(add)
	if len(problems) == 0 && patternCost > PatternBudget {
		add("form", "has patterns too costly to check: the sum of program size x max_length over patterned fields is %d, the limit is %d; shorten the patterns or lower max_length",
			patternCost, PatternBudget)
	}
	if len(problems) > 0 {
		return nil, &DefinitionError{Problems: problems}
	}
	c.asked()
	return c, nil
}

// compileField checks one field and returns its compiled form and its problems.
func compileField(fd Field) (compiledField, []string) {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }

	fd.Options = slices.Clone(fd.Options)
	fd.URLSchemes = slices.Clone(fd.URLSchemes)
	fd.Accept = slices.Clone(fd.Accept)
	cf := compiledField{Field: fd, label: fd.Label}
	if cf.label == "" {
		cf.label = fd.Name
	}
	t := fd.Type
	if !t.known() {
		bad("has unknown type %q; expected one of %s", t, typeList())
		return cf, probs
	}
	compileFile(&cf, bad)

	// Options.
	if len(fd.Options) > MaxOptions {
		bad("has %d options; the limit is %d", len(fd.Options), MaxOptions)
		return cf, probs
	}
	if t.choice() {
		if len(fd.Options) == 0 {
			bad("is a %s with no options; give at least one", t)
		}
		values := map[string]bool{}
		for j, o := range fd.Options {
			switch {
			case o.Value == "":
				bad("option %d has an empty value", j+1)
			case values[o.Value]:
				bad("option value %q appears twice", o.Value)
			}
			values[o.Value] = true
			cf.titled = cf.titled || o.Title != ""
		}
		cf.byValue = make(map[string]string, len(fd.Options))
		cf.byFold = make(map[string]string, 2*len(fd.Options))
		for _, o := range fd.Options {
			cf.byValue[o.Value] = o.Value
			for _, name := range []string{o.Value, o.Title} {
				if k := foldKey(name); name != "" && cf.byFold[k] == "" {
					cf.byFold[k] = o.Value
				}
			}
		}
	} else if len(fd.Options) > 0 {
		bad("has options, but only select and multi_select fields take options")
	}

	// Case.
	switch fd.Case {
	case KeepCase, UpperCase, LowerCase:
		if fd.Case != KeepCase && !t.caseAware() {
			bad("has case %q, but case applies only to text, email, url, select and multi_select fields", fd.Case)
		}
	default:
		bad(`has case %q; expected "upper", "lower" or none`, fd.Case)
	}

	// Lengths and pattern.
	if fd.MinLength != nil || fd.MaxLength != nil || fd.Pattern != "" {
		if !t.stringy() {
			bad("has a length or pattern constraint, but those apply only to text, email and url fields")
		}
	}
	checkRange(bad, "min_length", "max_length", fd.MinLength, fd.MaxLength)
	if fd.Pattern != "" {
		re, prog, err := compilePattern(fd.Pattern)
		if err != nil {
			bad("%v", err)
		}
		cf.re, cf.prog = re, prog
		// A pattern is checked only against values it can check quickly: the field's
		// max_length is at most MaxPatternedLength (and says so on the wire).
		if cf.MaxLength == nil || *cf.MaxLength > MaxPatternedLength {
			cf.MaxLength = Ptr(MaxPatternedLength)
		}
		if cf.MinLength != nil && *cf.MinLength > MaxPatternedLength {
			bad("has a pattern and min_length %d, but a patterned field takes at most %d characters", *cf.MinLength, MaxPatternedLength)
		}
	}

	// Numeric bounds.
	if fd.Minimum != nil || fd.Maximum != nil || fd.ExclusiveMinimum != nil || fd.ExclusiveMaximum != nil {
		if !t.numeric() {
			bad("has a numeric bound, but bounds apply only to number and integer fields")
		}
		for _, b := range []struct {
			name string
			v    *float64
		}{{"minimum", fd.Minimum}, {"maximum", fd.Maximum}, {"exclusive_minimum", fd.ExclusiveMinimum}, {"exclusive_maximum", fd.ExclusiveMaximum}} {
			if b.v != nil && (math.IsNaN(*b.v) || math.IsInf(*b.v, 0)) {
				bad("has a %s that is not a finite number", b.name)
			}
		}
		lo, loExcl := lowerBound(fd)
		hi, hiExcl := upperBound(fd)
		if lo != nil && hi != nil && (*lo > *hi || *lo == *hi && (loExcl || hiExcl)) {
			bad("has bounds that no number satisfies (lower %g, upper %g)", *lo, *hi)
		}
	}

	// Items.
	if fd.MinItems != nil || fd.MaxItems != nil {
		if t != MultiSelect {
			bad("has min_items or max_items, but those apply only to multi_select fields")
		}
		if fd.MinItems != nil && *fd.MinItems > len(fd.Options) && t == MultiSelect {
			bad("asks for at least %d choices but has only %d options", *fd.MinItems, len(fd.Options))
		}
	}
	checkRange(bad, "min_items", "max_items", fd.MinItems, fd.MaxItems)

	// URL settings.
	if len(fd.URLSchemes) > 0 || fd.AllowPrivateHosts {
		if t != URL {
			bad("has url_schemes or allow_private_hosts, but those apply only to url fields")
		}
	}
	for j, s := range fd.URLSchemes {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" || strings.ContainsAny(s, ":/") {
			bad("url_schemes entry %d must be a bare scheme such as \"https\"", j+1)
		}
		cf.schemes = append(cf.schemes, s)
	}
	if t == URL && len(cf.schemes) == 0 {
		cf.schemes = []string{"https"}
	}

	// The default must be a valid answer of its own.
	if len(probs) == 0 && fd.Default != nil {
		v, fe, blank := cf.normalise(fd.Default)
		switch {
		case blank:
			bad("has a blank default; leave the default out instead")
		case fe != nil:
			bad("has a default that is not a valid answer: %s", strings.TrimPrefix(fe.Message, cf.label+": "))
		default:
			cf.def = v
		}
	}
	return cf, probs
}

func checkRange(bad func(string, ...any), minName, maxName string, lo, hi *int) {
	if lo != nil && *lo < 0 {
		bad("has a negative %s", minName)
	}
	if hi != nil && *hi < 0 {
		bad("has a negative %s", maxName)
	}
	if lo != nil && hi != nil && *lo > *hi {
		bad("has %s %d greater than %s %d", minName, *lo, maxName, *hi)
	}
}

// lowerBound returns the tighter of the inclusive and exclusive lower bounds.
func lowerBound(fd Field) (*float64, bool) {
	switch {
	case fd.ExclusiveMinimum == nil:
		return fd.Minimum, false
	case fd.Minimum == nil || *fd.ExclusiveMinimum >= *fd.Minimum:
		return fd.ExclusiveMinimum, true
	default:
		return fd.Minimum, false
	}
}

// upperBound returns the tighter of the inclusive and exclusive upper bounds.
func upperBound(fd Field) (*float64, bool) {
	switch {
	case fd.ExclusiveMaximum == nil:
		return fd.Maximum, false
	case fd.Maximum == nil || *fd.ExclusiveMaximum <= *fd.Maximum:
		return fd.ExclusiveMaximum, true
	default:
		return fd.Maximum, false
	}
}

// CompileJSON decodes a form in its JSON form (see Form) and compiles it. Unknown keys are an
// error, so a misspelt constraint is reported rather than ignored.
func CompileJSON(data []byte) (*Compiled, error) {
	f, err := ParseForm(data)
	if err != nil {
		return nil, err
	}
	return Compile(f)
}

// ParseForm decodes a form in its JSON form without compiling it, so a caller can set what
// the JSON cannot (MaxAnswerBytes, checks) first. Unknown keys are an error.
func ParseForm(data []byte) (Form, error) {
	if len(data) > MaxFormBytes {
		return Form{}, &DefinitionError{Problems: []Problem{{Field: "form", Message: fmt.Sprintf("is %d bytes of JSON; the limit is %d", len(data), MaxFormBytes)}}}
	}
	var f Form
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Form{}, &DefinitionError{Problems: []Problem{{Field: "form", Message: "is not valid form JSON: " + err.Error()}}}
	}
	if dec.More() {
		return Form{}, &DefinitionError{Problems: []Problem{{Field: "form", Message: "has data after the form object"}}}
	}
	return f, nil
}

// Title returns the form's title.
func (c *Compiled) Title() string { return c.title }

// Fields returns a copy of the form's field definitions, in order.
func (c *Compiled) Fields() []Field {
	out := make([]Field, len(c.fields))
	for i, f := range c.fields {
		out[i] = f.Field
		out[i].Options = slices.Clone(f.Options)
		out[i].URLSchemes = slices.Clone(f.URLSchemes)
	}
	return out
}

// WireSchema returns the MCP requestedSchema of the fields the form asks now, in the form's
// field order: exactly the 2025-11-25 PrimitiveSchemaDefinition subset.
//
//   - text, email, url, date, date_time: {"type":"string"}, with "format" email, uri, date
//     or date-time, and minLength / maxLength;
//   - number, integer: {"type":"number"} or {"type":"integer"}, with minimum / maximum;
//   - boolean: {"type":"boolean"};
//   - select: {"type":"string","enum":[...]} when no option has a title, else
//     {"type":"string","oneOf":[{"const":...,"title":...}]}; never both, never "enumNames";
//   - multi_select: {"type":"array","items":{"type":"string","enum":[...]}} or
//     {"type":"array","items":{"anyOf":[{"const":...,"title":...}]}}, with minItems /
//     maxItems;
//   - file: left out, from "properties" and from "required": the subset has no file type,
//     and a file is asked only on elicitd's page (AskedFields still lists it).
//
// Every property may carry "title" (the label), "description" and "default". Patterns,
// exclusive bounds, URL schemes and custom checks have no place in the subset: they stay
// server-side, in Validate. Fields kept from an earlier answer (Keep) and conditional
// fields not yet due (Next) are not asked now, so they are not in it. A sensitive field
// is in it, as a string, but is asked on elicitd's page, never sent in form mode. The
// caller must not modify the returned bytes.
func (c *Compiled) WireSchema() json.RawMessage { return c.wire }

// Cost estimates the bytes a compiled form keeps alive: its fields and their text, the wire
// schema, and the programs of its patterns. A cache of forms is bounded by the sum.
func (c *Compiled) Cost() int {
	n := 512 + 2*len(c.wire)
	for i := range c.fields {
		f := &c.fields[i]
		n += 256 + len(f.Name) + len(f.Label) + len(f.Description) + len(f.Pattern)
		for _, o := range f.Options {
			n += 3 * (64 + len(o.Value) + len(o.Title)) // the option and its two look-up entries
		}
		n += f.prog * 96 // the program, and regexp's one-pass copy of it
	}
	return n
}
