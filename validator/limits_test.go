package validator

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func textField(name string) Field { return Field{Name: name, Type: Text} }

// Each limit refuses a form that passes it, naming the limit, and accepts one at it.
func TestFormLimitsNameTheLimit(t *testing.T) {
	fields := func(n int) []Field {
		out := make([]Field, n)
		for i := range out {
			out[i] = textField(fmt.Sprintf("f%d", i))
		}
		return out
	}
	options := func(n int) []Option {
		out := make([]Option, n)
		for i := range out {
			out[i] = Option{Value: fmt.Sprintf("o%d", i)}
		}
		return out
	}
	patterned := func(pattern string, maxLen int) Field {
		return Field{Name: "p", Type: Text, Pattern: pattern, MaxLength: Ptr(maxLen)}
	}
	for _, tc := range []struct {
		name    string
		ok, bad Form
		says    string
	}{
		{"fields", Form{Fields: fields(MaxFields)}, Form{Fields: fields(MaxFields + 1)}, "has 101 fields; the limit is 100"},
		{"options", Form{Fields: []Field{{Name: "s", Type: Select, Options: options(MaxOptions)}}},
			Form{Fields: []Field{{Name: "s", Type: Select, Options: options(MaxOptions + 1)}}}, "has 501 options; the limit is 500"},
		{"pattern bytes", Form{Fields: []Field{patterned(strings.Repeat("a", MaxPatternBytes), 10)}},
			Form{Fields: []Field{patterned(strings.Repeat("a", MaxPatternBytes+1), 10)}}, "has a pattern of 1001 bytes; the limit is 1000"},
		{"pattern program", Form{Fields: []Field{patterned("^(?:a?){600}$", 10)}},
			Form{Fields: []Field{patterned("^(?:a?){1000}$", 10)}}, "compiles to more than 2000 instructions"},
		{"nested repetition", Form{Fields: []Field{patterned("^(?:(?:ab){10}){10}$", 10)}},
			Form{Fields: []Field{patterned("^(?:(?:abc){30}){30}$", 10)}}, "compiles to more than 2000 instructions"},
		{"pattern budget", Form{Fields: []Field{patterned("^(?:a?){600}$", 1000), patterned2("^(?:a?){600}$", 1000)}},
			Form{Fields: []Field{patterned("^(?:a?){600}$", 1000), patterned2("^(?:a?){600}$", 1000), patterned3("^(?:a?){600}$", 1000), patterned4("^(?:a?){600}$", 1000)}},
			"has patterns too costly to check"},
		{"patterned min_length", Form{Fields: []Field{{Name: "p", Type: Text, Pattern: "^a+$", MinLength: Ptr(MaxPatternedLength)}}},
			Form{Fields: []Field{{Name: "p", Type: Text, Pattern: "^a+$", MinLength: Ptr(MaxPatternedLength + 1)}}}, "a patterned field takes at most 1000 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.ok)
			require.NoError(t, err, "at the limit")
			_, err = Compile(tc.bad)
			var de *DefinitionError
			require.ErrorAs(t, err, &de, "past the limit")
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

func patterned2(p string, n int) Field {
	return Field{Name: "p2", Type: Text, Pattern: p, MaxLength: Ptr(n)}
}
func patterned3(p string, n int) Field {
	return Field{Name: "p3", Type: Text, Pattern: p, MaxLength: Ptr(n)}
}
func patterned4(p string, n int) Field {
	return Field{Name: "p4", Type: Text, Pattern: p, MaxLength: Ptr(n)}
}

func TestFormBytesAreCheckedBeforeParsing(t *testing.T) {
	big := `{"title":"` + strings.Repeat("x", MaxFormBytes) + `","fields":[{"name":"a","type":"text"}]}`
	_, err := ParseForm([]byte(big))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bytes of JSON; the limit is 65536")
	_, err = FromMCPSchema(json.RawMessage(`{"type":"object","title":"` + strings.Repeat("x", MaxFormBytes) + `","properties":{"a":{"type":"string"}}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bytes of JSON; the limit is 65536")
}

// The attack that took 13.7 s to check 201 characters: (?:a?){1000} repeated. The estimate
// refuses it from its parse tree, before any program is built.
func TestExplodingPatternIsRefusedBeforeCompiling(t *testing.T) {
	tree, err := syntax.Parse(strings.Repeat("(?:a?){1000}", 80), syntax.Perl)
	require.NoError(t, err)
	assert.Greater(t, programBound(tree, 4*MaxPatternProgram), 4*MaxPatternProgram, "refused by the estimate, never expanded")
	_, err = Compile(Form{Fields: []Field{{Name: "p", Type: Text, Pattern: strings.Repeat("(?:a?){1000}", 80)}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "compiles to more than 2000 instructions")
}

func TestPatternedFieldsSayTheirLengthOnTheWire(t *testing.T) {
	c, err := Compile(Form{Fields: []Field{{Name: "zip", Type: Text, Pattern: "^[0-9]{5}$"}}})
	require.NoError(t, err)
	assert.Contains(t, string(c.WireSchema()), `"maxLength":1000`)
	_, errs := c.Validate(map[string]any{"zip": strings.Repeat("1", 1001)})
	require.Len(t, errs, 1)
	assert.Equal(t, "max_length", errs[0].Constraint)
}

func TestOptionLookupAgreesWithEqualFold(t *testing.T) {
	words := []string{"a", "A", "ß", "ẞ", "ss", "K", "k", "\u212a", "σ", "ς", "Σ", "İ", "i", "ǅ", "ǆ", "Ǆ", "straße", "STRASSE", "\xff", "é"}
	for _, a := range words {
		for _, b := range words {
			assert.Equal(t, strings.EqualFold(a, b), foldKey(a) == foldKey(b), "%q vs %q", a, b)
		}
	}
	f, err := Compile(Form{Fields: []Field{{Name: "c", Type: Select, Options: []Option{
		{Value: "de", Title: "Germany"}, {Value: "DE", Title: "Delaware"}, {Value: "x", Title: "de"}}}}})
	require.NoError(t, err)
	for in, want := range map[string]string{"de": "de", "DE": "DE", "De": "de", "GERMANY": "de", "delaware": "DE"} {
		data, errs := f.Validate(map[string]any{"c": in})
		require.Empty(t, errs, in)
		assert.Equal(t, want, data["c"], in)
	}
}

func TestKeepAsksOnlyTheWrongFields(t *testing.T) {
	c, err := Compile(Form{Fields: []Field{
		{Name: "name", Type: Text, Label: "Name", Required: true},
		{Name: "qty", Type: Integer, Label: "Quantity", Required: true, Minimum: Ptr(1.0)},
		{Name: "note", Type: Text, Label: "Note"},
		{Name: "email", Type: Email, Label: "Email", Required: true},
	}})
	require.NoError(t, err)
	_, errs, retry := c.Keep(map[string]any{"name": "Ada", "qty": "0", "email": "nope"})
	require.Len(t, errs, 2)
	assert.Equal(t, []string{"Quantity", "Email"}, []string{errs[0].Label, errs[1].Label})
	require.NotNil(t, retry)
	var wire struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	require.NoError(t, json.Unmarshal(retry.WireSchema(), &wire))
	assert.Len(t, wire.Properties, 2)
	assert.Contains(t, wire.Properties, "qty")
	assert.Contains(t, wire.Properties, "email")
	assert.Equal(t, []string{"qty", "email"}, wire.Required)

	// The second answer carries only the asked fields; the rest are kept as they were,
	// and a value sent for a kept field does not replace it.
	_, errs, retry2 := retry.Keep(map[string]any{"qty": " 5 ", "email": "bad", "name": "Mallory"})
	require.Len(t, errs, 1)
	data, errs := retry2.Validate(map[string]any{"email": "ada@example.com"})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"name": "Ada", "qty": int64(5), "email": "ada@example.com"}, data)

	// An answer over the size limit keeps nothing.
	small, err := Compile(Form{Fields: []Field{{Name: "a", Type: Text}}, MaxAnswerBytes: 64})
	require.NoError(t, err)
	_, errs, retry = small.Keep(map[string]any{"a": strings.Repeat("x", 100)})
	require.Len(t, errs, 1)
	assert.Same(t, small, retry)
}

func TestKeepAsksAgainAKeptFieldWhoseCheckFails(t *testing.T) {
	c, err := Compile(Form{Fields: []Field{
		{Name: "from", Type: Integer, Label: "From"},
		{Name: "to", Type: Integer, Label: "To", Check: func(v any, all map[string]any) error {
			if from, ok := all["from"].(int64); ok && v.(int64) < from {
				return fmt.Errorf("must not be before From")
			}
			return nil
		}},
		{Name: "x", Type: Integer, Label: "X", Required: true},
	}})
	require.NoError(t, err)
	_, errs, retry := c.Keep(map[string]any{"from": 5, "to": 7})
	require.Len(t, errs, 1) // x missing; from and to kept
	_, errs, retry = retry.Keep(map[string]any{"x": 1})
	require.Empty(t, errs)
	assert.Nil(t, retry)
}

// The estimate that guards compilation bounds the real program size from above, so nothing
// over the limit is ever built.
func TestProgramEstimateIsAnUpperBound(t *testing.T) {
	for _, p := range []string{"a", "abc", "^[a-z]+$", "(a|b|c)*d", "x{3,7}", "(?:ab){5,}", "(?i)hello", ".*?foo.+bar",
		"^(?:a?){600}$", "^(?:(?:ab){10}){10}$", `^\d{3}-\d{4}$`, "(a)(b)(c)|(d)", "[[:alpha:]]{2,4}", "(?:a|aa|aaa)*b", "^$", "a{0}"} {
		tree, err := syntax.Parse(p, syntax.Perl)
		require.NoError(t, err, p)
		prog, err := syntax.Compile(tree.Simplify())
		require.NoError(t, err, p)
		assert.GreaterOrEqual(t, programBound(tree, 1<<30), len(prog.Inst), p)
	}
}

// BenchmarkWorstAcceptedForm checks a maximal answer against the costliest forms the limits
// accept, one per kind of cost (target: under 50 ms an answer).
func BenchmarkWorstAcceptedForm(b *testing.B) {
	costly := "(?:a?){650}b" // close to MaxPatternProgram instructions; never matches a run of a's
	_, prog, err := compilePattern(costly)
	if err != nil {
		b.Fatal(err)
	}
	second := PatternBudget/prog - MaxPatternedLength // what the budget leaves for a second field
	opts := make([]Option, MaxOptions)
	items := make([]any, MaxOptions)
	for i := range opts {
		opts[i] = Option{Value: fmt.Sprintf("v%03d", i), Title: fmt.Sprintf("Choice %03d", i)}
		items[i] = fmt.Sprintf("CHOICE %03d", i) // matched by title, whatever the case
	}
	cases := []struct {
		name    string
		form    Form
		content func() map[string]any
	}{
		{"patterns", Form{Fields: []Field{
			{Name: "a", Type: Text, Pattern: costly, MaxLength: Ptr(MaxPatternedLength)},
			{Name: "b", Type: Text, Pattern: costly, MaxLength: Ptr(second)},
		}}, func() map[string]any {
			return map[string]any{"a": strings.Repeat("a", MaxPatternedLength), "b": strings.Repeat("a", second)}
		}},
		{"multi_select", Form{Fields: []Field{{Name: "m", Type: MultiSelect, Options: opts}}},
			func() map[string]any { return map[string]any{"m": slices.Clone(items)} }},
		{"emails", emailForm(), func() map[string]any {
			m := map[string]any{}
			for i := range MaxFields {
				m[fmt.Sprintf("e%d", i)] = strings.Repeat("a", DefaultMaxAnswerBytes/MaxFields-40) + "@example.com"
			}
			return m
		}},
		{"urls", urlForm(), func() map[string]any {
			m := map[string]any{}
			for i := range MaxFields {
				m[fmt.Sprintf("u%d", i)] = "https://example.com/" + strings.Repeat("a/", (DefaultMaxAnswerBytes/MaxFields-60)/2)
			}
			return m
		}},
	}
	for _, tc := range cases {
		c, err := Compile(tc.form)
		if err != nil {
			b.Fatal(err)
		}
		content := tc.content()
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				c.Validate(content)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/answer")
		})
	}
}

func emailForm() Form {
	var f Form
	for i := range MaxFields {
		f.Fields = append(f.Fields, Field{Name: fmt.Sprintf("e%d", i), Type: Email})
	}
	return f
}

func urlForm() Form {
	var f Form
	for i := range MaxFields {
		f.Fields = append(f.Fields, Field{Name: fmt.Sprintf("u%d", i), Type: URL})
	}
	return f
}
