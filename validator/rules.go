package validator

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Condition is a test on the answer to another field, for When and RequiredWhen. Exactly one
// of Equals, OneOf and Present is set. A multi_select answer matches Equals when it includes
// the value, and OneOf when it includes any of them.
//
//	{"field": "country", "equals": "DE"}
//	{"field": "country", "one_of": ["DE", "AT"]}
//	{"field": "company", "present": true}
type Condition struct {
	Field   string `json:"field"`
	Equals  any    `json:"equals,omitempty"`
	OneOf   []any  `json:"one_of,omitempty"`
	Present bool   `json:"present,omitempty"`
}

// Comparison compares a field's answer with another field's, when both are answered:
// Op is "lt", "le", "gt", "ge", "eq" or "ne". Numbers compare as numbers, dates and times as
// instants, anything else as text (eq and ne only). The message names both fields.
//
//	{"name": "check_out", "type": "date", "compare": {"op": "gt", "field": "check_in"}}
type Comparison struct {
	Op    string `json:"op"`
	Field string `json:"field"`
}

var compareOps = map[string][2]string{ // op -> the phrase for numbers, for dates
	"lt": {"must be less than", "must be before"},
	"le": {"must be at most", "must be on or before"},
	"gt": {"must be greater than", "must be after"},
	"ge": {"must be at least", "must be on or after"},
	"eq": {"must equal", "must be the same as"},
	"ne": {"must differ from", "must differ from"},
}

// Field stages: a conditional field waits until the field its When names has been settled.
const (
	stageAsk     int8 = iota // asked now (or kept from an earlier round)
	stagePending             // its condition cannot be decided yet
	stageDropped             // its condition did not hold: never asked, not in the data
	stageLater               // asked through the page in the next round (SplitForPage)
)

// compileRules checks every field's When, RequiredWhen and Compare against the other
// fields, and marks conditional fields pending. It adds problems through add.
func (c *Compiled) compileRules(add func(field, format string, args ...any)) {
	index := make(map[string]int, len(c.fields))
	for i, f := range c.fields {
		index[f.Name] = i
	}
	for i := range c.fields {
		f := &c.fields[i]
		if f.Widget != "" && f.Widget != "multiline" && f.Widget != "password" {
			add(f.Name, `has widget %q; expected "multiline" or "password"`, f.Widget)
		}
		if f.Widget == "multiline" && f.Type != Text {
			add(f.Name, `has widget "multiline", which only text fields take`)
		}
		if f.Widget == "password" {
			f.Sensitive = true
		}
		for _, r := range []struct {
			name    string
			cond    *Condition
			earlier bool
		}{{"when", f.When, true}, {"required_when", f.RequiredWhen, false}} {
			if r.cond == nil {
				continue
			}
			j, ok := index[r.cond.Field]
			switch {
			case !ok || j == i:
				add(f.Name, "%s names field %q, which is not another field of the form", r.name, r.cond.Field)
				continue
			case r.earlier && j > i:
				add(f.Name, "when names field %q, which comes after it; a condition must name an earlier field", r.cond.Field)
			}
			set := 0
			for _, b := range []bool{r.cond.Equals != nil, len(r.cond.OneOf) > 0, r.cond.Present} {
				if b {
					set++
				}
			}
			if set != 1 {
				add(f.Name, "%s must have exactly one of equals, one_of and present", r.name)
			}
		}
		if f.When != nil {
			f.stage = stagePending
			if f.Required && f.def != nil {
				add(f.Name, "is conditional and required with a default; drop one")
			}
		}
		if cmp := f.Compare; cmp != nil {
			j, ok := index[cmp.Field]
			if _, known := compareOps[cmp.Op]; !known {
				add(f.Name, `compare has op %q; expected lt, le, gt, ge, eq or ne`, cmp.Op)
			}
			if !ok || j == i {
				add(f.Name, "compare names field %q, which is not another field of the form", cmp.Field)
			} else if ordered(f.Type) != ordered(c.fields[j].Type) || (ordered(f.Type) == "" && cmp.Op != "eq" && cmp.Op != "ne") {
				add(f.Name, "compare %s with %q: a %s and a %s do not compare that way", cmp.Op, cmp.Field, f.Type, c.fields[j].Type)
			}
		}
	}
	c.rules = slices.ContainsFunc(c.fields, func(f compiledField) bool { return f.RequiredWhen != nil || f.Compare != nil })
	c.conditional = slices.ContainsFunc(c.fields, func(f compiledField) bool { return f.When != nil })
}

// ordered says how values of type t are ordered: "number", "time", or "" (only eq and ne).
func ordered(t Type) string {
	switch t {
	case Number, Integer:
		return "number"
	case Date, DateTime:
		return "time"
	}
	return ""
}

// holds reports whether cond holds for the answers in data.
func (cond *Condition) holds(data map[string]any) bool {
	v, present := data[cond.Field]
	switch {
	case cond.Present:
		return present
	case !present:
		return false
	case cond.Equals != nil:
		return matches(v, cond.Equals)
	}
	return slices.ContainsFunc(cond.OneOf, func(want any) bool { return matches(v, want) })
}

// matches compares an answer with a condition's value, loosely: numbers by value, text by
// its folded form; a multi_select answer matches when it includes the value.
func matches(v, want any) bool {
	if l, ok := v.([]string); ok {
		return slices.ContainsFunc(l, func(s string) bool { return matches(s, want) })
	}
	if x, ok := asFloat(v); ok {
		y, ok := asFloat(want)
		return ok && x == y
	}
	if b, ok := v.(bool); ok {
		w, ok := want.(bool)
		return ok && b == w
	}
	s, ok := v.(string)
	w, ok2 := want.(string)
	return ok && ok2 && foldKey(s) == foldKey(w)
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}

// describe says what a condition asks for, for a message: "Country is Germany".
func (c *Compiled) describe(cond *Condition) string {
	other := c.field(cond.Field)
	name := other.label
	switch {
	case cond.Present:
		return name + " is answered"
	case cond.Equals != nil:
		return name + " is " + other.title(cond.Equals)
	case len(cond.OneOf) == 1:
		return name + " is " + other.title(cond.OneOf[0])
	}
	titles := make([]string, len(cond.OneOf))
	for i, v := range cond.OneOf {
		titles[i] = other.title(v)
	}
	return name + " is one of " + strings.Join(titles, ", ")
}

func (c *Compiled) field(name string) *compiledField {
	for i := range c.fields {
		if c.fields[i].Name == name {
			return &c.fields[i]
		}
	}
	return nil
}

// title returns how the person knows a value of f: an option's title, or the value.
func (f *compiledField) title(v any) string {
	s := fmt.Sprint(v)
	for _, o := range f.Options {
		if foldKey(o.Value) == foldKey(s) && o.Title != "" {
			return o.Title
		}
	}
	return s
}

// runRules checks RequiredWhen and Compare on the fields asked now, once every field has been
// normalised, and merges their errors into errs in field order. failed marks fields that
// already failed.
func (c *Compiled) runRules(data map[string]any, errs []FieldError, failed map[string]bool) []FieldError {
	added := false
	for i := range c.fields {
		f := &c.fields[i]
		if f.stage != stageAsk || f.kept || failed[f.Name] {
			continue
		}
		v, present := data[f.Name]
		var fe *FieldError
		switch {
		case !present && f.RequiredWhen != nil && f.RequiredWhen.holds(data):
			fe = f.fail("required", "is required when %s", c.describe(f.RequiredWhen))
		case present && f.Compare != nil:
			fe = c.compare(f, v, data)
		}
		if fe != nil {
			errs = append(errs, *fe)
			failed[f.Name], added = true, true
		}
	}
	if added {
		c.sortErrors(errs)
	}
	return errs
}

func (c *Compiled) sortErrors(errs []FieldError) {
	order := make(map[string]int, len(c.fields))
	for i, f := range c.fields {
		order[f.Name] = i
	}
	slices.SortStableFunc(errs, func(a, b FieldError) int { return order[a.Field] - order[b.Field] })
}

// compare checks f's answer v against the other field's, if that one is answered.
func (c *Compiled) compare(f *compiledField, v any, data map[string]any) *FieldError {
	other := c.field(f.Compare.Field)
	w, answered := data[other.Name]
	if !answered {
		return nil
	}
	var order int
	phrase := compareOps[f.Compare.Op][0]
	switch ordered(f.Type) {
	case "number":
		x, _ := asFloat(v)
		y, _ := asFloat(w)
		order = cmpFloat(x, y)
	case "time":
		x, y := instant(v), instant(w)
		order = x.Compare(y)
		phrase = compareOps[f.Compare.Op][1]
	default:
		if matches(v, w) && matches(w, v) {
			order = 0
		} else {
			order = 1 // unequal: only eq and ne are allowed here
		}
	}
	if holds(f.Compare.Op, order) {
		return nil
	}
	return f.fail("compare", "%s %s", phrase, other.label)
}

// holds reports whether a comparison's op holds for an order (negative, zero, positive).
func holds(op string, order int) bool {
	switch op {
	case "lt":
		return order < 0
	case "le":
		return order <= 0
	case "gt":
		return order > 0
	case "ge":
		return order >= 0
	case "eq":
		return order == 0
	}
	return order != 0 // ne
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// instant reads a normalised date or date_time answer.
func instant(v any) time.Time {
	s, _ := v.(string)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t
	}
	t, _ := time.Parse(time.DateOnly, s)
	return t
}

// Conditional reports whether some field is asked only under a condition (When): such a
// form is asked in rounds, and Next gives each follow-up.
func (c *Compiled) Conditional() bool { return c.conditional }

// Rounds is the most rounds a valid answer to the form can take: 1 plus the longest chain
// of conditions.
func (c *Compiled) Rounds() int {
	depth := make(map[string]int, len(c.fields))
	most := 0
	for _, f := range c.fields {
		d := 0
		if f.When != nil {
			d = depth[f.When.Field] + 1
		}
		depth[f.Name] = d
		most = max(most, d)
	}
	return most + 1
}

// Next returns the follow-up form after a valid answer data to c: it asks the conditional
// fields whose condition now holds and keeps every answer given so far, or it is nil when
// nothing more is to be asked. Fields whose condition failed are dropped.
func (c *Compiled) Next(data map[string]any) *Compiled {
	r := *c
	r.fields = slices.Clone(c.fields)
	settled := func(j int) bool {
		g := &r.fields[j]
		return g.stage == stageDropped || g.stage == stageAsk && g.kept
	}
	for i := range r.fields {
		if f := &r.fields[i]; f.stage == stageAsk {
			f.kept, f.keptValue = true, data[f.Name]
		}
	}
	asked := false
	for i := range r.fields {
		f := &r.fields[i]
		if f.stage == stageLater {
			f.stage, asked = stageAsk, true
			continue
		}
		if f.stage != stagePending {
			continue
		}
		j := slices.IndexFunc(r.fields, func(g compiledField) bool { return g.Name == f.When.Field })
		if !settled(j) {
			continue
		}
		if f.When.holds(data) {
			f.stage, f.kept, asked = stageAsk, false, true
		} else {
			f.stage = stageDropped
		}
	}
	if !asked {
		return nil
	}
	r.asked()
	return &r
}

// Hints returns the rendering hints of the fields asked now, by field name: "placeholder"
// and "widget", where set. Nil when there are none. The caller must not modify it.
func (c *Compiled) Hints() map[string]map[string]string { return c.hints }

// Asked returns how many fields the form asks now: those of its current round, less any
// kept from an earlier answer (see Keep).
func (c *Compiled) Asked() int {
	n := 0
	for i := range c.fields {
		if f := &c.fields[i]; f.stage == stageAsk && !f.kept {
			n++
		}
	}
	return n
}

// asked derives what a form sends for the fields it asks now: the wire schema and the
// hints. Compile, Keep, Next and SplitForPage call it once for each form they make.
func (c *Compiled) asked() {
	c.wire = buildWire(c.fields)
	c.hints = nil
	for i := range c.fields {
		f := &c.fields[i]
		if f.stage != stageAsk || f.kept || (f.Placeholder == "" && f.Widget == "") {
			continue
		}
		h := map[string]string{}
		if f.Placeholder != "" {
			h["placeholder"] = f.Placeholder
		}
		if f.Widget != "" {
			h["widget"] = f.Widget
		}
		if c.hints == nil {
			c.hints = map[string]map[string]string{}
		}
		c.hints[f.Name] = h
	}
}
