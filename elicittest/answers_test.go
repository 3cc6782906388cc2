package elicittest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/elicittest"
	v "github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var patterns = []string{`^[A-Z]{2}[0-9]{3}$`, `^[a-z]+(-[a-z]+)*$`, `^(yes|no|maybe)$`, `^\d{5}(-\d{4})?$`, `[0-9]`}

// randomForm builds a form of 1 to 8 fields with random types and constraints.
func randomForm(r *rand.Rand) v.Form {
	f := v.Form{Title: "random"}
	n := 1 + r.IntN(8)
	for i := range n {
		fd := v.Field{Name: fmt.Sprintf("f%d", i), Label: fmt.Sprintf("Field %d", i), Required: r.IntN(2) == 0}
		switch r.IntN(10) {
		case 0:
			fd.Type = v.Text
			if r.IntN(2) == 0 {
				fd.MinLength = v.Ptr(2 + r.IntN(3))
			}
			if r.IntN(2) == 0 {
				fd.MaxLength = v.Ptr(6 + r.IntN(10))
			}
		case 1:
			fd.Type, fd.Pattern = v.Text, patterns[r.IntN(len(patterns))]
		case 2, 3:
			fd.Type = []v.Type{v.Number, v.Integer}[r.IntN(2)]
			switch r.IntN(4) {
			case 0:
				fd.Minimum, fd.Maximum = v.Ptr(float64(r.IntN(10))), v.Ptr(float64(20+r.IntN(10)))
			case 1:
				fd.ExclusiveMinimum = v.Ptr(0.0)
			case 2:
				fd.ExclusiveMaximum = v.Ptr(100.0)
			}
		case 4:
			fd.Type = v.Boolean
		case 5:
			fd.Type = []v.Type{v.Date, v.DateTime}[r.IntN(2)]
		case 6:
			fd.Type = []v.Type{v.Email, v.URL}[r.IntN(2)]
		case 7, 8:
			fd.Type = []v.Type{v.Select, v.MultiSelect}[r.IntN(2)]
			for j := range 2 + r.IntN(4) {
				o := v.Option{Value: fmt.Sprintf("opt%d", j)}
				if r.IntN(2) == 0 {
					o.Title = fmt.Sprintf("Option %d", j)
				}
				fd.Options = append(fd.Options, o)
			}
			if fd.Type == v.MultiSelect && r.IntN(2) == 0 {
				fd.MinItems, fd.MaxItems = v.Ptr(2), v.Ptr(2)
			}
		case 9:
			fd.Type = v.Text
			if i > 0 {
				fd.RequiredWhen = &v.Condition{Field: "f0", Present: true}
			}
		}
		// Some numbers and dates compare with an earlier field of their kind.
		if i > 0 && (fd.Type == v.Number || fd.Type == v.Date) && fd.Minimum == nil && fd.ExclusiveMinimum == nil && fd.ExclusiveMaximum == nil && r.IntN(2) == 0 {
			for j := range i {
				if g := f.Fields[j]; g.Type == fd.Type && g.Minimum == nil && g.ExclusiveMinimum == nil && g.ExclusiveMaximum == nil {
					fd.Compare = &v.Comparison{Op: []string{"lt", "le", "gt", "ge", "ne"}[r.IntN(5)], Field: g.Name}
					break
				}
			}
		}
		// Some fields are asked only when the first one is answered.
		if i > 0 && r.IntN(6) == 0 {
			fd.When, fd.RequiredWhen = &v.Condition{Field: "f0", Present: true}, nil
		}
		f.Fields = append(f.Fields, fd)
	}
	return f
}

// Over random forms: a generated valid answer always validates, and each generated invalid
// answer fails with exactly one error, on the field and the constraint it targets.
func TestGeneratedAnswersOverRandomForms(t *testing.T) {
	constraints := map[string]int{}
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 7))
		form := randomForm(r)
		c, err := v.Compile(form)
		require.NoError(t, err, "seed %d", seed)
		valid, err := elicittest.Valid(c, r)
		require.NoError(t, err, "seed %d", seed)
		_, errs := c.Validate(valid)
		require.Empty(t, errs, "seed %d: %v", seed, valid)

		cases, err := elicittest.Invalid(c, r)
		require.NoError(t, err)
		for _, cs := range cases {
			_, errs := c.Validate(cs.Content)
			require.Len(t, errs, 1, "seed %d: %s of %s: %v gave %v", seed, cs.Constraint, cs.Field, cs.Content, errs)
			assert.Equal(t, cs.Field, errs[0].Field, "seed %d", seed)
			assert.Equal(t, cs.Constraint, errs[0].Constraint, "seed %d: %v", seed, cs.Content)
			constraints[cs.Constraint]++
		}
		if c.Conditional() {
			if next := c.Next(mustValidate(t, c, valid)); next != nil {
				answer, err := elicittest.Valid(next, r)
				require.NoError(t, err)
				_, errs := next.Validate(answer)
				require.Empty(t, errs, "seed %d: the follow-up round", seed)
			}
		}
	}
	for _, want := range []string{"required", "min_length", "max_length", "pattern", "minimum", "maximum", "exclusive_minimum",
		"exclusive_maximum", "integer", "option", "min_items", "max_items", "format", "private_host", "compare"} {
		assert.Positive(t, constraints[want], "no generated case broke %s", want)
	}
}

func mustValidate(t *testing.T, c *v.Compiled, content map[string]any) map[string]any {
	t.Helper()
	data, errs := c.Validate(content)
	require.Empty(t, errs)
	return data
}

func TestAssertFieldErrorFailsWhenTheErrorIsMissing(t *testing.T) {
	errs := []v.FieldError{{Field: "a", Constraint: "required"}}
	assert.True(t, elicittest.AssertFieldError(t, errs, "a", "required"))
	rec := &recorder{TB: t}
	assert.False(t, elicittest.AssertFieldError(rec, errs, "a", "maximum"))
	assert.False(t, elicittest.AssertOnlyFieldError(rec, append(errs, errs...), "a", "required"))
	assert.Equal(t, 2, rec.failed)
}

// recorder counts failures instead of failing the test.
type recorder struct {
	testing.TB
	failed int
}

func (r *recorder) Errorf(string, ...any) { r.failed++ }
func (r *recorder) Helper()               {}

// Invalid answers for a form, each breaking one named constraint.
func ExampleInvalid() {
	c, _ := v.CompileJSON([]byte(`{"fields": [
		{"name": "qty", "type": "integer", "label": "Quantity", "required": true, "minimum": 1, "maximum": 9},
		{"name": "email", "type": "email", "label": "Email"}]}`))
	cases, _ := elicittest.Invalid(c, rand.New(rand.NewPCG(1, 2)))
	for _, cs := range cases {
		_, errs := c.Validate(cs.Content)
		fmt.Printf("%s %s: %s\n", cs.Field, cs.Constraint, errs[0].Message)
	}
	// Output:
	// qty required: Quantity: is required
	// qty maximum: Quantity: must be at most 9
	// qty minimum: Quantity: must be at least 1
	// qty integer: Quantity: must be a whole number
	// email format: Email: must be an email address like name@example.com
}

// A file field is asked (on the page), though it is not on the wire schema: Valid answers
// it with a file of a type it accepts, and Invalid breaks its type and size.
func TestGeneratedAnswersForAFileField(t *testing.T) {
	c, err := v.Compile(v.Form{Fields: []v.Field{
		{Name: "user", Type: v.Text, Required: true},
		{Name: "scan", Type: v.File, Required: true, Accept: []string{"image/*"}, MaxBytes: 1024},
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"user", "scan"}, fieldNames(elicittest.Asked(c)))
	valid, err := elicittest.Valid(c, nil)
	require.NoError(t, err)
	data := mustValidate(t, c, valid)
	assert.Equal(t, "image/png", data["scan"].(*v.Upload).Type)

	cases, err := elicittest.Invalid(c, nil)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, cs := range cases {
		_, errs := c.Validate(cs.Content)
		require.Len(t, errs, 1, "%s of %s", cs.Constraint, cs.Field)
		assert.Equal(t, cs.Constraint, errs[0].Constraint)
		got[cs.Field+" "+cs.Constraint] = true
	}
	for _, want := range []string{"scan required", "scan accept", "scan max_bytes", "user required"} {
		assert.True(t, got[want], want)
	}
}

func fieldNames(fs []v.Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}
