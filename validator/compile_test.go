package validator_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v "github.com/elicitd/elicitd/validator"
)

func problems(t *testing.T, f v.Form) []v.Problem {
	t.Helper()
	c, err := v.Compile(f)
	require.Error(t, err)
	assert.Nil(t, c)
	var de *v.DefinitionError
	require.True(t, errors.As(err, &de), "a *DefinitionError, got %T", err)
	return de.Problems
}

func TestCompileReportsEachProblem(t *testing.T) {
	opts := []v.Option{{Value: "a"}, {Value: "b"}}
	cases := []struct {
		name   string
		field  v.Field
		field2 *v.Field
		want   string // a substring of the one problem
		key    string // the problem's field, when not the field's name
	}{
		{name: "unknown type", field: v.Field{Name: "x", Type: "colour"}, want: `unknown type "colour"; expected one of text, number`},
		{name: "file accept", field: v.Field{Name: "x", Type: v.File, Accept: []string{"pdf"}}, want: `accept entry 1 must be a media type such as "application/pdf"`},
		{name: "file max", field: v.Field{Name: "x", Type: v.File, MaxBytes: -1}, want: "max_bytes -1; it must be positive"},
		{name: "file default", field: v.Field{Name: "x", Type: v.File, Default: "a"}, want: "a file cannot have one"},
		{name: "accept on text", field: v.Field{Name: "x", Type: v.Text, Accept: []string{"image/*"}}, want: "apply only to file fields"},
		{name: "empty name", field: v.Field{Type: v.Text}, want: "has no name", key: "fields[0]"},
		{name: "duplicate", field: v.Field{Name: "x", Type: v.Text}, field2: &v.Field{Name: "x", Type: v.Number}, want: "defined twice"},
		{name: "select without options", field: v.Field{Name: "x", Type: v.Select}, want: "no options"},
		{name: "multi without options", field: v.Field{Name: "x", Type: v.MultiSelect}, want: "no options"},
		{name: "empty option", field: v.Field{Name: "x", Type: v.Select, Options: []v.Option{{Value: ""}}}, want: "option 1 has an empty value"},
		{name: "repeated option", field: v.Field{Name: "x", Type: v.Select, Options: []v.Option{{Value: "a"}, {Value: "a"}}}, want: `option value "a" appears twice`},
		{name: "options on text", field: v.Field{Name: "x", Type: v.Text, Options: opts}, want: "only select and multi_select"},
		{name: "default not an option", field: v.Field{Name: "x", Type: v.Select, Options: opts, Default: "c"}, want: "default that is not a valid answer: must be one of a, b"},
		{name: "default breaks max length", field: v.Field{Name: "x", Type: v.Text, MaxLength: v.Ptr(2), Default: "abc"}, want: "must be at most 2 characters"},
		{name: "default breaks minimum", field: v.Field{Name: "x", Type: v.Number, Minimum: v.Ptr(1.0), Default: 0.0}, want: "must be at least 1"},
		{name: "default of wrong type", field: v.Field{Name: "x", Type: v.Boolean, Default: "maybe"}, want: "must be true or false"},
		{name: "blank default", field: v.Field{Name: "x", Type: v.Text, Default: "  "}, want: "blank default"},
		{name: "min length over max", field: v.Field{Name: "x", Type: v.Text, MinLength: v.Ptr(5), MaxLength: v.Ptr(2)}, want: "min_length 5 greater than max_length 2"},
		{name: "negative length", field: v.Field{Name: "x", Type: v.Text, MinLength: v.Ptr(-1)}, want: "negative min_length"},
		{name: "minimum over maximum", field: v.Field{Name: "x", Type: v.Number, Minimum: v.Ptr(5.0), Maximum: v.Ptr(1.0)}, want: "no number satisfies"},
		{name: "exclusive bounds meet", field: v.Field{Name: "x", Type: v.Number, ExclusiveMinimum: v.Ptr(1.0), Maximum: v.Ptr(1.0)}, want: "no number satisfies"},
		{name: "NaN bound", field: v.Field{Name: "x", Type: v.Number, Maximum: v.Ptr(math.NaN())}, want: "maximum that is not a finite number"},
		{name: "bound on text", field: v.Field{Name: "x", Type: v.Text, Minimum: v.Ptr(1.0)}, want: "only to number and integer"},
		{name: "min items over max", field: v.Field{Name: "x", Type: v.MultiSelect, Options: opts, MinItems: v.Ptr(2), MaxItems: v.Ptr(1)}, want: "min_items 2 greater than max_items 1"},
		{name: "min items over options", field: v.Field{Name: "x", Type: v.MultiSelect, Options: opts, MinItems: v.Ptr(3)}, want: "at least 3 choices but has only 2 options"},
		{name: "items on select", field: v.Field{Name: "x", Type: v.Select, Options: opts, MaxItems: v.Ptr(1)}, want: "only to multi_select"},
		{name: "invalid pattern", field: v.Field{Name: "x", Type: v.Text, Pattern: "(a"}, want: "invalid pattern"},
		{name: "backreference is not RE2", field: v.Field{Name: "x", Type: v.Text, Pattern: `(a)\1`}, want: "invalid pattern"},
		{name: "pattern on number", field: v.Field{Name: "x", Type: v.Number, Pattern: "a"}, want: "only to text, email and url"},
		{name: "unknown case", field: v.Field{Name: "x", Type: v.Text, Case: "title"}, want: `case "title"`},
		{name: "case on number", field: v.Field{Name: "x", Type: v.Number, Case: v.UpperCase}, want: "case applies only"},
		{name: "schemes on text", field: v.Field{Name: "x", Type: v.Text, URLSchemes: []string{"https"}}, want: "only to url"},
		{name: "scheme with colon", field: v.Field{Name: "x", Type: v.URL, URLSchemes: []string{"https://"}}, want: "bare scheme"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fields := []v.Field{c.field}
			if c.field2 != nil {
				fields = append(fields, *c.field2)
			}
			ps := problems(t, v.Form{Fields: fields})
			require.Len(t, ps, 1, "%+v", ps)
			assert.Contains(t, ps[0].Message, c.want)
			key := c.key
			if key == "" {
				key = c.field.Name
			}
			assert.Equal(t, key, ps[0].Field)
		})
	}
}

func TestCompileReportsEveryProblemAtOnce(t *testing.T) {
	ps := problems(t, v.Form{Fields: []v.Field{
		{Name: "a", Type: "colour"},
		{Name: "b", Type: v.Select},
		{Name: "c", Type: v.Text, Pattern: "(", MinLength: v.Ptr(3), MaxLength: v.Ptr(1)},
		{Name: "a", Type: v.Text},
	}})
	var got []string
	for _, p := range ps {
		got = append(got, p.Field)
	}
	assert.Equal(t, []string{"a", "b", "c", "c", "a"}, got)
	err := &v.DefinitionError{Problems: ps}
	assert.Contains(t, err.Error(), "invalid form definition (5 problems)")
	assert.Contains(t, err.Error(), "b: is a select with no options")
}

func TestCompileNeedsFields(t *testing.T) {
	ps := problems(t, v.Form{})
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].Message, "no fields")
}

func TestCompileJSON(t *testing.T) {
	c, err := v.CompileJSON([]byte(`{"title":"T","fields":[{"name":"w","type":"number","label":"Weight","required":true,"exclusive_minimum":0}]}`))
	require.NoError(t, err)
	assert.Equal(t, "T", c.Title())
	_, errs := c.Validate(map[string]any{"w": "-1"})
	require.Len(t, errs, 1)
	assert.Equal(t, "Weight: must be a positive, finite number", errs[0].Message)

	_, err = v.CompileJSON([]byte(`{"fields":[{"name":"w","type":"number","maximun":3}]}`))
	require.ErrorContains(t, err, `unknown field "maximun"`)
	_, err = v.CompileJSON([]byte(`{"fields":[{"name":"w","type":"text"}]} {}`))
	require.ErrorContains(t, err, "data after the form")
	_, err = v.CompileJSON([]byte(`[]`))
	require.ErrorContains(t, err, "not valid form JSON")
}

func TestCompiledKeepsItsOwnCopy(t *testing.T) {
	f := v.Form{Fields: []v.Field{{Name: "s", Type: v.Select, Options: []v.Option{{Value: "a"}, {Value: "b"}}}}}
	c, err := v.Compile(f)
	require.NoError(t, err)
	wire := string(c.WireSchema())
	f.Fields[0].Options[0].Value = "zzz"
	f.Fields[0].Name = "renamed"
	assert.Equal(t, wire, string(c.WireSchema()))
	data, errs := c.Validate(map[string]any{"s": "a"})
	require.Empty(t, errs)
	assert.Equal(t, "a", data["s"])
	fields := c.Fields()
	fields[0].Options[0].Value = "changed"
	assert.Equal(t, "a", c.Fields()[0].Options[0].Value)
	assert.False(t, c.NeedsPage())
}
