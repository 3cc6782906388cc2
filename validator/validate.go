package validator

import (
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate normalises content and checks it against the form.
//
// The answer's size comes first: over the limit, it is refused with one error and nothing in
// it is parsed. Then each field is normalised (strings trimmed, the case rule applied, numeric
// strings turned into numbers, "true"/"false" into booleans, an option matched by its value
// or title whatever the case) and checked; then the custom checks run, with every normalised
// answer at hand. Every error is returned, in field order, one a field at most. Optional
// fields left blank get their default; keys the form does not define are dropped.
//
// On success data holds one entry per answered or defaulted field: strings, float64 for
// number, int64 for integer, bool, and []string for multi_select. Messages never quote what
// the person typed.
func (c *Compiled) Validate(content map[string]any) (data map[string]any, errs []FieldError) {
	data, errs = c.ValidatePartial(content)
	if len(errs) > 0 {
		return nil, errs
	}
	return data, nil
}

// ValidatePartial is Validate that also returns, beside the errors, the normalised values
// of the fields that passed, so a caller can keep the answers that were right and ask again
// only for the rest. An answer over the size limit keeps nothing.
func (c *Compiled) ValidatePartial(content map[string]any) (data map[string]any, errs []FieldError) {
	if !withinSize(content, c.maxBytes) {
		return nil, []FieldError{{Field: "", Label: "Answer", Constraint: "size",
			Message: fmt.Sprintf("Answer: is too large (the limit is %d bytes)", c.maxBytes)}}
	}
	data = make(map[string]any, len(c.fields))
	var failed []bool // which fields failed, only needed for custom checks
	if c.checks {
		failed = make([]bool, len(c.fields))
	}
	for i := range c.fields {
		f := &c.fields[i]
		if f.stage != stageAsk {
			continue // conditional: not asked now (and not in the data when dropped)
		}
		if f.kept {
			if f.keptValue != nil {
				data[f.Name] = f.keptValue
			}
			continue
		}
		v, fe, blank := f.normalise(content[f.Name])
		switch {
		case blank && f.Required:
			fe = f.fail("required", "is required")
		case blank:
			if f.def != nil {
				data[f.Name] = f.defaultValue()
			}
			continue
		case fe == nil:
			data[f.Name] = v
			continue
		}
		errs = append(errs, *fe)
		if failed != nil {
			failed[i] = true
		}
	}
	if c.checks {
		errs = c.runChecks(data, errs, failed)
		for i, f := range failed {
			if f {
				delete(data, c.fields[i].Name) // a value that failed its custom check is not kept
			}
		}
	}
	if c.rules {
		failedNames := make(map[string]bool, len(errs))
		for _, fe := range errs {
			failedNames[fe.Field] = true
		}
		n := len(errs)
		errs = c.runRules(data, errs, failedNames)
		if len(errs) > n {
			for _, fe := range errs {
				delete(data, fe.Field) // a value that broke a rule is not kept
			}
		}
	}
	return data, errs
}

// Keep is Validate for a form asked again: when content is invalid, it also returns the form
// for the re-prompt, which asks only the fields at fault (and those whose own check failed)
// and keeps the valid answers: they are not on its wire schema, and its Validate puts them
// in the data as they were. An answer over the size limit keeps nothing (retry is c).
// On a valid answer retry is nil.
func (c *Compiled) Keep(content map[string]any) (data map[string]any, errs []FieldError, retry *Compiled) {
	data, errs = c.ValidatePartial(content)
	if len(errs) == 0 {
		return data, nil, nil
	}
	wrong := make(map[string]bool, len(errs))
	for _, fe := range errs {
		if fe.Field == "" {
			return nil, errs, c // the whole answer was refused: ask it all again
		}
		wrong[fe.Field] = true
	}
	r := *c
	r.fields = slices.Clone(c.fields)
	for i := range r.fields {
		// Every field not at fault is kept with its value in data (a field kept before is
		// there too; a blank optional one is absent, so nil); a field at fault, even one kept
		// before whose custom check has now failed, is asked again.
		f := &r.fields[i]
		if f.stage == stageAsk {
			f.kept, f.keptValue = !wrong[f.Name], data[f.Name]
		}
	}
	r.asked()
	return nil, errs, &r
}

// runChecks runs the custom checks of the fields that passed and have a value, and merges
// their errors into errs in field order.
func (c *Compiled) runChecks(data map[string]any, errs []FieldError, failed []bool) []FieldError {
	added := false
	for i := range c.fields {
		f := &c.fields[i]
		v, ok := data[f.Name]
		if f.Check == nil || failed[i] || !ok {
			continue
		}
		if err := f.Check(v, data); err != nil {
			errs = append(errs, *f.fail("check", "%s", err.Error()))
			failed[i], added = true, true
		}
	}
	if added {
		c.sortErrors(errs)
	}
	return errs
}

// defaultValue returns the default, copying a list so no caller can change the form's own.
func (f *compiledField) defaultValue() any {
	if l, ok := f.def.([]string); ok {
		return slices.Clone(l)
	}
	return f.def
}

func (f *compiledField) fail(constraint, format string, args ...any) *FieldError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &FieldError{Field: f.Name, Label: f.label, Constraint: constraint, Message: f.label + ": " + msg}
}

// normalise turns one raw value into the field's canonical value, or reports why it cannot.
// blank is true for a value that counts as not given: absent, null, whitespace only, or an
// empty list.
func (f *compiledField) normalise(raw any) (v any, fe *FieldError, blank bool) {
	if raw == nil {
		return nil, nil, true
	}
	switch f.Type {
	case Number, Integer:
		return f.number(raw)
	case Boolean:
		return f.boolean(raw)
	case MultiSelect:
		return f.multi(raw)
	case File:
		return f.upload(raw)
	}
	s, ok := f.text(raw)
	if !ok {
		return nil, f.fail("type", "must be %s", f.expectation()), false
	}
	if s == "" {
		return nil, nil, true
	}
	switch f.Type {
	case Text:
		return s, f.checkString(s), false
	case Email:
		if !isEmail(s) {
			return nil, f.fail("format", "must be an email address like name@example.com"), false
		}
		return s, f.checkString(s), false
	case URL:
		if fe := f.checkURL(s); fe != nil {
			return nil, fe, false
		}
		return s, f.checkString(s), false
	case Date:
		if len(s) != len("2006-01-02") {
			return nil, f.fail("format", "must be a date in the form YYYY-MM-DD"), false
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			if strings.Contains(err.Error(), "out of range") {
				return nil, f.fail("format", "must be a real calendar date (YYYY-MM-DD)"), false
			}
			return nil, f.fail("format", "must be a date in the form YYYY-MM-DD"), false
		}
		return s, nil, false
	case DateTime:
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, f.fail("format", "must be a date and time like 2026-11-22T10:00:00Z (RFC 3339)"), false
		}
		return s, nil, false
	case Select:
		if o, ok := f.option(s); ok {
			return o, nil, false
		}
		return nil, f.fail("option", "must be one of %s", f.optionList()), false
	}
	return nil, f.fail("type", "has an unsupported type"), false // unreachable: Compile checked the type
}

// text returns raw as a trimmed string with the case rule applied. Numbers and booleans are
// accepted as their usual text, since a client may send 12345 for a postal code.
func (f *compiledField) text(raw any) (string, bool) {
	var s string
	switch v := raw.(type) {
	case string:
		s = v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", false
		}
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		s = string(v)
	case int:
		s = strconv.Itoa(v)
	case int64:
		s = strconv.FormatInt(v, 10)
	case bool:
		s = strconv.FormatBool(v)
	default:
		return "", false
	}
	s = strings.TrimSpace(s)
	switch f.Case {
	case UpperCase:
		s = strings.ToUpper(s)
	case LowerCase:
		s = strings.ToLower(s)
	}
	return s, true
}

func (f *compiledField) checkString(s string) *FieldError {
	if f.MinLength != nil || f.MaxLength != nil {
		n := utf8.RuneCountInString(s)
		if f.MinLength != nil && n < *f.MinLength {
			return f.fail("min_length", "must be at least %d characters", *f.MinLength)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return f.fail("max_length", "must be at most %d characters", *f.MaxLength)
		}
	}
	if f.re != nil && !f.re.MatchString(s) {
		return f.fail("pattern", "is not in the expected format")
	}
	return nil
}

func (f *compiledField) number(raw any) (any, *FieldError, bool) {
	var x float64
	switch v := raw.(type) {
	case float64:
		x = v
	case float32:
		x = float64(v)
	case int:
		x = float64(v)
	case int64:
		x = float64(v)
	case json.Number:
		p, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, f.fail("type", "must be %s", f.expectation()), false
		}
		x = p
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return nil, nil, true
		}
		p, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) || strings.ContainsAny(s, "xXpP_") {
			return nil, f.fail("type", "must be %s", f.expectation()), false
		}
		x = p
	default:
		return nil, f.fail("type", "must be %s", f.expectation()), false
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, f.fail("finite", "must be %s", f.expectation()), false
	}
	if f.Type == Integer && (x != math.Trunc(x) || math.Abs(x) > 1<<53) {
		return nil, f.fail("integer", "must be %s", f.expectation()), false
	}
	if fe := f.checkBounds(x); fe != nil {
		return nil, fe, false
	}
	if f.Type == Integer {
		return int64(x), nil, false
	}
	return x, nil, false
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (f *compiledField) checkBounds(x float64) *FieldError {
	switch {
	case f.Minimum != nil && x < *f.Minimum:
		return f.fail("minimum", "must be at least %s", fmtNum(*f.Minimum))
	case f.ExclusiveMinimum != nil && x <= *f.ExclusiveMinimum:
		if *f.ExclusiveMinimum == 0 {
			return f.fail("exclusive_minimum", "must be %s", f.expectation())
		}
		return f.fail("exclusive_minimum", "must be greater than %s", fmtNum(*f.ExclusiveMinimum))
	case f.Maximum != nil && x > *f.Maximum:
		return f.fail("maximum", "must be at most %s", fmtNum(*f.Maximum))
	case f.ExclusiveMaximum != nil && x >= *f.ExclusiveMaximum:
		return f.fail("exclusive_maximum", "must be less than %s", fmtNum(*f.ExclusiveMaximum))
	}
	return nil
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// expectation describes what a field takes, for messages: "a positive, finite number".
func (f *compiledField) expectation() string {
	switch f.Type {
	case Number, Integer:
		var adj []string
		switch {
		case f.ExclusiveMinimum != nil && *f.ExclusiveMinimum == 0 && (f.Minimum == nil || *f.Minimum <= 0):
			adj = append(adj, "positive")
		case f.Minimum != nil && *f.Minimum == 0:
			adj = append(adj, "non-negative")
		}
		if f.Type == Integer {
			adj = append(adj, "whole number")
		} else {
			adj = append(adj, "finite number")
		}
		return "a " + strings.Join(adj, ", ")
	case Boolean:
		return "true or false"
	case MultiSelect:
		return "a list of choices"
	case Email:
		return "an email address"
	case URL:
		return "a URL"
	case Date:
		return "a date (YYYY-MM-DD)"
	case DateTime:
		return "a date and time (RFC 3339)"
	case Select:
		return "one of " + f.optionList()
	}
	return "text"
}

func (f *compiledField) boolean(raw any) (any, *FieldError, bool) {
	switch v := raw.(type) {
	case bool:
		return v, nil, false
	case string:
		switch s := strings.ToLower(strings.TrimSpace(v)); s {
		case "":
			return nil, nil, true
		case "true":
			return true, nil, false
		case "false":
			return false, nil, false
		}
	}
	return nil, f.fail("type", "must be true or false"), false
}

func (f *compiledField) multi(raw any) (any, *FieldError, bool) {
	var items []string
	switch v := raw.(type) {
	case []any:
		items = make([]string, 0, len(v))
		for _, it := range v {
			s, ok := it.(string)
			if !ok {
				return nil, f.fail("type", "must be a list of choices from %s", f.optionList()), false
			}
			items = append(items, s)
		}
	case []string:
		items = slices.Clone(v)
	default:
		return nil, f.fail("type", "must be a list of choices from %s", f.optionList()), false
	}
	out := items[:0]
	seen := make(map[string]bool, min(len(items), len(f.Options)))
	for _, s := range items {
		s, _ = f.text(s)
		if s == "" {
			continue
		}
		o, ok := f.option(s)
		if !ok {
			return nil, f.fail("option", "may only contain %s", f.optionList()), false
		}
		if seen[o] {
			return nil, f.fail("unique", "must not list a choice twice"), false
		}
		seen[o] = true
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, nil, true
	}
	if f.MinItems != nil && len(out) < *f.MinItems {
		return nil, f.fail("min_items", "must have at least %d choices", *f.MinItems), false
	}
	if f.MaxItems != nil && len(out) > *f.MaxItems {
		return nil, f.fail("max_items", "must have at most %d choices", *f.MaxItems), false
	}
	return out, nil, false
}

// option finds the option s names: by value exactly, else by value or title whatever the case
// (the first option, in order, whose value or title equals s under strings.EqualFold). Both
// are map look-ups, so a long list of choices costs linear time.
func (f *compiledField) option(s string) (string, bool) {
	if v, ok := f.byValue[s]; ok {
		return v, true
	}
	v, ok := f.byFold[foldKey(s)]
	return v, ok
}

// foldKey maps s to a key shared by exactly the strings strings.EqualFold deems equal to it:
// each rune becomes the smallest rune of its simple case-folding orbit.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// maxListedOptions bounds how many options a message spells out.
const maxListedOptions = 12

func (f *compiledField) optionList() string {
	var b strings.Builder
	for i, o := range f.Options {
		if i == maxListedOptions {
			fmt.Fprintf(&b, ", ... (%d more)", len(f.Options)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if o.Title != "" && o.Title != o.Value {
			fmt.Fprintf(&b, "%s (%s)", o.Title, o.Value)
		} else {
			b.WriteString(o.Value)
		}
	}
	return b.String()
}

func isEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	domain := s[at+1:]
	return strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}

// checkURL checks scheme, host and user info, and, unless private hosts are allowed, refuses
// hosts that are non-public by their spelling alone. It resolves nothing: code that will
// fetch the URL must call CheckURL (and dial through a guarded dialer).
func (f *compiledField) checkURL(s string) *FieldError {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return f.fail("format", "must be a full URL such as https://example.com/page")
	}
	if !slices.Contains(f.schemes, strings.ToLower(u.Scheme)) {
		return f.fail("scheme", "must start with %s://", strings.Join(f.schemes, ":// or "))
	}
	if u.User != nil {
		return f.fail("format", "must not contain a user name or password")
	}
	if u.Hostname() == "" {
		return f.fail("host", "must include a host name")
	}
	if f.AllowPrivateHosts {
		return nil
	}
	if err := checkHostSpelling(u.Hostname()); err != nil {
		return f.fail("private_host", "must point to a public host")
	}
	return nil
}

// withinSize reports whether content, encoded as JSON, takes at most limit bytes. It walks
// the value instead of encoding it and stops as soon as the limit is passed.
func withinSize(content map[string]any, limit int) bool {
	n := 0
	return sizeOf(content, &n, limit)
}

func sizeOf(v any, n *int, limit int) bool {
	switch x := v.(type) {
	case nil:
		*n += 4
	case bool:
		*n += 5
	case string:
		*n += jsonStringLen(x)
	case float64, float32, int, int64, json.Number:
		*n += 24 // at most the length of a float64 in JSON
	case map[string]any:
		*n += 2
		for k, e := range x {
			*n += jsonStringLen(k) + 2
			if !sizeOf(e, n, limit) {
				return false
			}
		}
	case []any:
		*n += 2
		for _, e := range x {
			*n++
			if !sizeOf(e, n, limit) {
				return false
			}
		}
	case []string:
		*n += 2
		for _, e := range x {
			*n += jsonStringLen(e) + 1
		}
	default:
		*n += 24
	}
	return *n <= limit
}

// jsonStringLen is the length of s as a JSON string, counting the escapes encoding/json
// writes.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		default:
			n++
		}
	}
	return n
}
