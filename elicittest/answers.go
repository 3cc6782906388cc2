// Package elicittest is a test kit for forms and for tools that ask: valid and invalid
// answers generated for any compiled form, a simulated person who drives a tool through an
// in-memory MCP client in either era with a script (Connect; ConnectURL and OnPage for
// questions asked on elicitd's page, with a pagetest.Browser), and assertions on field
// errors.
package elicittest

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/elicitd/elicitd/validator"
)

// Asked returns the fields the form asks now, in order: a conditional field waits for a
// follow-up round, a kept field is not asked again. A file field is among them, though
// never on the wire schema: it is asked on elicitd's page.
func Asked(c *validator.Compiled) []validator.Field { return c.AskedFields() }

// Valid returns an answer to the fields c asks now that c accepts, chosen with r (nil: a
// fixed seed): optional
// fields are sometimes left out. Fields with a custom Check, a comparison or a condition
// are tried again until the answer passes; the error says so when none did.
func Valid(c *validator.Compiled, r *rand.Rand) (map[string]any, error) {
	r = orSeeded(r)
	fields := Asked(c)
	var errs []validator.FieldError
	for range 200 {
		content := map[string]any{}
		for _, f := range fields {
			if !f.Required && f.RequiredWhen == nil && r.IntN(4) == 0 {
				continue
			}
			v, err := validValue(f, r)
			if err != nil {
				return nil, err
			}
			content[f.Name] = v
		}
		if _, errs = c.Validate(content); len(errs) == 0 {
			return content, nil
		}
	}
	return nil, fmt.Errorf("elicittest: no valid answer found in 200 tries; the last failed with %s", validator.JoinMessages(errs))
}

// Case is an answer that breaks one constraint of one field; the rest of it is valid.
type Case struct {
	Field      string
	Constraint string // as in validator.FieldError: required, min_length, maximum, format, option, ...
	Content    map[string]any
}

// Invalid returns, for each constraint of each field c asks now, an answer that breaks only
// that constraint: a required field left out, text too short or too long or off its
// pattern, a number out of range or not whole, a bad email, URL or date, a value that is no
// option, too few or too many choices, a URL naming a private host, a broken comparison, a
// file of a type not accepted or (up to 1 MiB) too large.
func Invalid(c *validator.Compiled, r *rand.Rand) ([]Case, error) {
	r = orSeeded(r)
	base, err := Valid(c, r)
	if err != nil {
		return nil, err
	}
	fields := Asked(c)
	byName := map[string]validator.Field{}
	for _, f := range fields {
		byName[f.Name] = f
	}
	var out []Case
	with := func(f validator.Field, constraint string, v any) {
		content := maps.Clone(base)
		if v == nil {
			delete(content, f.Name)
		} else {
			content[f.Name] = v
		}
		out = append(out, Case{Field: f.Name, Constraint: constraint, Content: content})
	}
	for _, f := range fields {
		if f.Required {
			with(f, "required", nil)
		}
		switch f.Type {
		case validator.Text, validator.Email, validator.URL:
			if f.MinLength != nil && *f.MinLength > 1 && f.Type == validator.Text && f.Pattern == "" {
				with(f, "min_length", strings.Repeat("a", *f.MinLength-1))
			}
			if f.MaxLength != nil && f.Type == validator.Text && f.Pattern == "" {
				with(f, "max_length", strings.Repeat("a", *f.MaxLength+1))
			}
			if f.Pattern != "" {
				if s, ok := offPattern(f); ok {
					with(f, "pattern", s)
				}
			}
		case validator.Number, validator.Integer:
			if f.Maximum != nil {
				with(f, "maximum", *f.Maximum+1)
			}
			if f.Minimum != nil {
				with(f, "minimum", *f.Minimum-1)
			}
			if f.ExclusiveMaximum != nil {
				with(f, "exclusive_maximum", *f.ExclusiveMaximum)
			}
			if f.ExclusiveMinimum != nil {
				with(f, "exclusive_minimum", *f.ExclusiveMinimum)
			}
			if f.Type == validator.Integer {
				lo, hi := bounds(f)
				if x := math.Floor(lo) + 0.5; x > lo && x < hi {
					with(f, "integer", x)
				}
			}
		case validator.Select:
			with(f, "option", "none-of-the-options")
		case validator.MultiSelect:
			with(f, "option", []any{"none-of-the-options"})
			if f.MinItems != nil && *f.MinItems > 1 {
				with(f, "min_items", []any{f.Options[0].Value})
			}
			if f.MaxItems != nil && *f.MaxItems < len(f.Options) {
				var all []any
				for _, o := range f.Options {
					all = append(all, o.Value)
				}
				with(f, "max_items", all)
			}
		case validator.File:
			if f.MaxBytes > 0 && f.MaxBytes < 1<<20 {
				with(f, "max_bytes", &validator.Upload{Name: "big.txt", Bytes: []byte(strings.Repeat("a", int(f.MaxBytes)+1))})
			}
			for _, s := range sampleFiles {
				if !accepted(f.Accept, s.typ) {
					with(f, "accept", &validator.Upload{Name: s.name, Bytes: s.data})
					break
				}
			}
		case validator.Date:
			with(f, "format", "2026-02-30")
		case validator.DateTime:
			with(f, "format", "tomorrow at ten")
		}
		switch f.Type {
		case validator.Email:
			with(f, "format", "not-an-address")
		case validator.URL:
			if u := schemeOf(f) + "://127.0.0.1/"; !f.AllowPrivateHosts && (f.MaxLength == nil || len(u) <= *f.MaxLength) {
				with(f, "private_host", u)
			}
		}
		if cmp := f.Compare; cmp != nil {
			if other, ok := byName[cmp.Field]; ok {
				if v, ok := breakComparison(f, other, base, cmp.Op); ok {
					with(f, "compare", v)
				}
			}
		}
	}
	return out, nil
}

// orSeeded returns r, or when it is nil a generator with a fixed seed: the same answers on
// every run.
func orSeeded(r *rand.Rand) *rand.Rand {
	if r == nil {
		return rand.New(rand.NewPCG(1, 2))
	}
	return r
}

func bounds(f validator.Field) (lo, hi float64) {
	lo, hi = -1000, 1000
	if f.Minimum != nil {
		lo = *f.Minimum
	}
	if f.ExclusiveMinimum != nil {
		lo = math.Max(lo, *f.ExclusiveMinimum+1e-6)
	}
	if f.Maximum != nil {
		hi = *f.Maximum
	}
	if f.ExclusiveMaximum != nil {
		hi = math.Min(hi, *f.ExclusiveMaximum-1e-6)
	}
	if lo > hi { // only bounds far from the defaults: keep a window inside them
		if f.Minimum != nil || f.ExclusiveMinimum != nil {
			hi = lo + 1000
		} else {
			lo = hi - 1000
		}
	}
	return lo, hi
}

func schemeOf(f validator.Field) string {
	if len(f.URLSchemes) > 0 {
		return strings.ToLower(strings.TrimSpace(f.URLSchemes[0]))
	}
	return "https"
}

// validValue returns a value of f's type inside its constraints.
func validValue(f validator.Field, r *rand.Rand) (any, error) {
	minLen, maxLen := 1, 24
	if f.MinLength != nil {
		minLen = max(minLen, *f.MinLength)
	}
	if f.MaxLength != nil {
		maxLen = min(max(maxLen, minLen), *f.MaxLength)
	}
	switch f.Type {
	case validator.Text:
		if f.Pattern != "" {
			return matching(f, r, minLen, maxLen)
		}
		return word(r, minLen+r.IntN(maxLen-minLen+1)), nil
	case validator.Email:
		return "u" + word(r, 3) + "@example.com", nil
	case validator.URL:
		return schemeOf(f) + "://example.com/" + word(r, 4), nil
	case validator.Number:
		lo, hi := bounds(f)
		return lo + r.Float64()*(hi-lo), nil
	case validator.Integer:
		lo, hi := bounds(f)
		a, b := math.Ceil(lo), math.Floor(hi)
		if a > b {
			return nil, fmt.Errorf("elicittest: field %q: no whole number lies within its bounds", f.Name)
		}
		return a + float64(r.IntN(int(math.Min(b-a, 1e6))+1)), nil
	case validator.Boolean:
		return r.IntN(2) == 0, nil
	case validator.Date:
		return fmt.Sprintf("2026-%02d-%02d", 1+r.IntN(12), 1+r.IntN(28)), nil
	case validator.DateTime:
		return fmt.Sprintf("2026-%02d-%02dT%02d:%02d:00Z", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60)), nil
	case validator.Select:
		return f.Options[r.IntN(len(f.Options))].Value, nil
	case validator.File:
		return sampleFile(f)
	case validator.MultiSelect:
		lo, hi := 1, len(f.Options)
		if f.MinItems != nil {
			lo = max(lo, *f.MinItems)
		}
		if f.MaxItems != nil {
			hi = min(hi, *f.MaxItems)
		}
		if lo > hi {
			return nil, fmt.Errorf("elicittest: field %q: no number of choices fits min_items and max_items", f.Name)
		}
		n := lo + r.IntN(hi-lo+1)
		var out []any
		for _, i := range r.Perm(len(f.Options))[:n] {
			out = append(out, f.Options[i].Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("elicittest: field %q has type %q, which has no generator", f.Name, f.Type)
}

// sampleFiles are small files of the types a file field's accept list may name.
var sampleFiles = []struct {
	name, typ string
	data      []byte
}{
	{"note.txt", "text/plain", []byte("a note from elicittest\n")},
	{"doc.pdf", "application/pdf", []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")},
	{"dot.png", "image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")},
}

// sampleFile returns a file f accepts, as the page hands it over.
func sampleFile(f validator.Field) (any, error) {
	for _, s := range sampleFiles {
		if accepted(f.Accept, s.typ) {
			return &validator.Upload{Name: s.name, Bytes: s.data}, nil
		}
	}
	return nil, fmt.Errorf("elicittest: field %q accepts %s, for which there is no sample file", f.Name, strings.Join(f.Accept, ", "))
}

// accepted reports whether a file of media type typ fits accept (empty takes any).
func accepted(accept []string, typ string) bool {
	if len(accept) == 0 {
		return true
	}
	for _, a := range accept {
		if a == typ || strings.HasSuffix(a, "/*") && strings.HasPrefix(typ, strings.TrimSuffix(a, "*")) {
			return true
		}
	}
	return false
}

func word(r *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// matching returns a string its pattern matches, of a length the field allows.
func matching(f validator.Field, r *rand.Rand, minLen, maxLen int) (string, error) {
	re, err := syntax.Parse(f.Pattern, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("elicittest: field %q: %w", f.Name, err)
	}
	for range 100 {
		var b strings.Builder
		generate(&b, re.Simplify(), r)
		if n := len([]rune(b.String())); n >= minLen && n <= maxLen && strings.TrimSpace(b.String()) == b.String() {
			return b.String(), nil
		}
	}
	return "", fmt.Errorf("elicittest: field %q: no string of %d to %d characters matching its pattern was found", f.Name, minLen, maxLen)
}

// generate writes a string re matches.
func generate(b *strings.Builder, re *syntax.Regexp, r *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		i := r.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[i], re.Rune[i+1]
		hi = min(hi, lo+64) // stay near the start of wide ranges: printable and short
		b.WriteRune(lo + rune(r.IntN(int(hi-lo)+1)))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		generate(b, re.Sub[0], r)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			generate(b, s, r)
		}
	case syntax.OpAlternate:
		generate(b, re.Sub[r.IntN(len(re.Sub))], r)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 3
			}
		}
		for range lo + r.IntN(hi-lo+1) {
			generate(b, re.Sub[0], r)
		}
	}
}

// offPattern returns a value of an allowed length that f's pattern does not match.
func offPattern(f validator.Field) (string, bool) {
	re, err := regexp.Compile(f.Pattern)
	if err != nil {
		return "", false
	}
	for _, s := range []string{"~", "~~~~", "0", "A", "a", "-", "!!", "Z9"} {
		if f.MinLength != nil && len(s) < *f.MinLength {
			s += strings.Repeat("~", *f.MinLength-len(s))
		}
		if f.MaxLength != nil && len(s) > *f.MaxLength {
			continue
		}
		if !re.MatchString(s) {
			return s, true
		}
	}
	return "", false
}

// breakComparison returns a value of f that breaks its comparison with other's answer in
// base, when there is one.
func breakComparison(f, other validator.Field, base map[string]any, op string) (any, bool) {
	w, ok := base[other.Name]
	if !ok {
		return nil, false
	}
	switch f.Type {
	case validator.Number, validator.Integer:
		x, ok := w.(float64)
		if !ok {
			return nil, false
		}
		y := x + 1 // breaks lt, le and eq
		switch op {
		case "gt", "ge":
			y = x - 1
		case "ne":
			y = x
		}
		if lo, hi := bounds(f); y < lo || y > hi {
			return nil, false // out of the field's own range: another constraint would fail
		}
		return y, true
	case validator.Date:
		s, _ := w.(string)
		if op == "ne" {
			return s, true
		}
		if op == "lt" || op == "le" {
			return "2027-06-01", true
		}
		return "2025-06-01", true
	}
	if op == "ne" {
		return w, true
	}
	return nil, false
}
