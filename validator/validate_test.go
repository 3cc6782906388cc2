package validator_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	v "github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func compile(t *testing.T, fields ...v.Field) *v.Compiled {
	t.Helper()
	c, err := v.Compile(v.Form{Title: "t", Fields: fields})
	require.NoError(t, err)
	return c
}

// one validates a single-field form and returns the value kept or the one error.
func one(t *testing.T, f v.Field, raw any) (any, *v.FieldError) {
	t.Helper()
	c := compile(t, f)
	content := map[string]any{}
	if raw != nil {
		content[f.Name] = raw
	}
	data, errs := c.Validate(content)
	if len(errs) > 0 {
		require.Len(t, errs, 1)
		assert.Nil(t, data)
		return nil, &errs[0]
	}
	return data[f.Name], nil
}

type vcase struct {
	name       string
	field      v.Field
	in         any
	want       any    // the value kept, when valid
	constraint string // the failed constraint, when invalid
	message    string // the exact message, when given
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, fe := one(t, c.field, c.in)
			if c.constraint == "" {
				require.Nil(t, fe, "unexpected error")
				assert.Equal(t, c.want, got)
				return
			}
			require.NotNil(t, fe, "expected a %s error, kept %v", c.constraint, got)
			assert.Equal(t, c.constraint, fe.Constraint, fe.Message)
			assert.Equal(t, c.field.Name, fe.Field)
			label := c.field.Label
			if label == "" {
				label = c.field.Name
			}
			assert.True(t, strings.HasPrefix(fe.Message, label+": "), fe.Message)
			if c.message != "" {
				assert.Equal(t, c.message, fe.Message)
			}
		})
	}
}

func TestTextNormalisationAndChecks(t *testing.T) {
	name := v.Field{Name: "name", Type: v.Text, Label: "Name"}
	code := v.Field{Name: "code", Type: v.Text, Label: "Code", Case: v.UpperCase, Pattern: `^[A-Z]{2}\d$`}
	lower := v.Field{Name: "tag", Type: v.Text, Case: v.LowerCase}
	short := v.Field{Name: "nick", Type: v.Text, Label: "Nickname", MinLength: v.Ptr(2), MaxLength: v.Ptr(5)}
	runCases(t, []vcase{
		{name: "trimmed", field: name, in: "  Ada Lovelace \n", want: "Ada Lovelace"},
		{name: "number as text", field: name, in: 12345.0, want: "12345"},
		{name: "bool as text", field: name, in: true, want: "true"},
		{name: "object is not text", field: name, in: map[string]any{}, constraint: "type", message: "Name: must be text"},
		{name: "upper then pattern", field: code, in: " ab1 ", want: "AB1"},
		{name: "pattern fails", field: code, in: "abc", constraint: "pattern", message: "Code: is not in the expected format"},
		{name: "lower", field: lower, in: "MiXeD", want: "mixed"},
		{name: "length in code points", field: short, in: "héllo", want: "héllo"},
		{name: "too long", field: short, in: "héllos", constraint: "max_length", message: "Nickname: must be at most 5 characters"},
		{name: "too short", field: short, in: "é", constraint: "min_length", message: "Nickname: must be at least 2 characters"},
		{name: "emoji count once", field: short, in: "👍👍", want: "👍👍"},
	})
}

func TestNumbers(t *testing.T) {
	weight := v.Field{Name: "weight", Type: v.Number, Label: "Package weight", ExclusiveMinimum: v.Ptr(0.0), Maximum: v.Ptr(70.0)}
	qty := v.Field{Name: "qty", Type: v.Integer, Label: "Quantity", Minimum: v.Ptr(1.0), ExclusiveMaximum: v.Ptr(100.0)}
	temp := v.Field{Name: "temp", Type: v.Number, Minimum: v.Ptr(-40.0), ExclusiveMinimum: v.Ptr(-50.0)}
	runCases(t, []vcase{
		{name: "float", field: weight, in: 5.5, want: 5.5},
		{name: "numeric string", field: weight, in: " 5 ", want: 5.0},
		{name: "exponent string", field: weight, in: "1e1", want: 10.0},
		{name: "not a number", field: weight, in: "abc", constraint: "type", message: "Package weight: must be a positive, finite number"},
		{name: "NaN string", field: weight, in: "NaN", constraint: "finite", message: "Package weight: must be a positive, finite number"},
		{name: "Inf string", field: weight, in: "+Inf", constraint: "finite"},
		{name: "overflow", field: weight, in: "1e999", constraint: "finite"},
		{name: "NaN value", field: weight, in: math.NaN(), constraint: "finite"},
		{name: "Inf value", field: weight, in: math.Inf(-1), constraint: "finite"},
		{name: "hex is not a number here", field: weight, in: "0x10", constraint: "type"},
		{name: "underscores are not a number here", field: weight, in: "1_000", constraint: "type"},
		{name: "zero is not positive", field: weight, in: 0.0, constraint: "exclusive_minimum", message: "Package weight: must be a positive, finite number"},
		{name: "over maximum", field: weight, in: 70.5, constraint: "maximum", message: "Package weight: must be at most 70"},
		{name: "at maximum", field: weight, in: 70.0, want: 70.0},
		{name: "bool is not a number", field: weight, in: true, constraint: "type"},
		{name: "integer from float", field: qty, in: 3.0, want: int64(3)},
		{name: "integer from string", field: qty, in: "42", want: int64(42)},
		{name: "integer must be whole", field: qty, in: "1.5", constraint: "integer", message: "Quantity: must be a whole number"},
		{name: "integer minimum", field: qty, in: 0.0, constraint: "minimum", message: "Quantity: must be at least 1"},
		{name: "integer exclusive maximum", field: qty, in: 100.0, constraint: "exclusive_maximum", message: "Quantity: must be less than 100"},
		{name: "huge integer", field: qty, in: 1e300, constraint: "integer"},
		{name: "Go int", field: qty, in: 7, want: int64(7)},
		{name: "inclusive bound tighter", field: temp, in: -45.0, constraint: "minimum", message: "temp: must be at least -40"},
	})
}

func TestBooleansDatesAndFormats(t *testing.T) {
	ok := v.Field{Name: "ok", Type: v.Boolean, Label: "Signature"}
	day := v.Field{Name: "day", Type: v.Date, Label: "Ship on"}
	at := v.Field{Name: "at", Type: v.DateTime, Label: "Pickup"}
	mail := v.Field{Name: "email", Type: v.Email, Label: "Email"}
	runCases(t, []vcase{
		{name: "bool", field: ok, in: false, want: false},
		{name: "bool string", field: ok, in: " TRUE ", want: true},
		{name: "false string", field: ok, in: "false", want: false},
		{name: "yes is not a bool", field: ok, in: "yes", constraint: "type", message: "Signature: must be true or false"},
		{name: "number is not a bool", field: ok, in: 1.0, constraint: "type"},
		{name: "date", field: day, in: "2026-11-22", want: "2026-11-22"},
		{name: "leap day", field: day, in: "2028-02-29", want: "2028-02-29"},
		{name: "not a leap year", field: day, in: "2026-02-29", constraint: "format", message: "Ship on: must be a real calendar date (YYYY-MM-DD)"},
		{name: "day 31 in a 30-day month", field: day, in: "2026-04-31", constraint: "format"},
		{name: "short month", field: day, in: "2026-1-02", constraint: "format", message: "Ship on: must be a date in the form YYYY-MM-DD"},
		{name: "slashes", field: day, in: "2026/11/22", constraint: "format"},
		{name: "date-time", field: at, in: "2026-11-22T10:00:00Z", want: "2026-11-22T10:00:00Z"},
		{name: "date-time offset", field: at, in: "2026-11-22T10:00:00.5+01:00", want: "2026-11-22T10:00:00.5+01:00"},
		{name: "date-time without zone", field: at, in: "2026-11-22T10:00:00", constraint: "format"},
		{name: "email", field: mail, in: " ada@example.com ", want: "ada@example.com"},
		{name: "email with display name", field: mail, in: "Ada <ada@example.com>", constraint: "format"},
		{name: "email without domain dot", field: mail, in: "ada@example", constraint: "format", message: "Email: must be an email address like name@example.com"},
		{name: "email without at", field: mail, in: "ada.example.com", constraint: "format"},
	})
}

func TestURLFields(t *testing.T) {
	site := v.Field{Name: "site", Type: v.URL, Label: "Website"}
	any := v.Field{Name: "any", Type: v.URL, URLSchemes: []string{"http", "HTTPS"}}
	internal := v.Field{Name: "internal", Type: v.URL, AllowPrivateHosts: true}
	runCases(t, []vcase{
		{name: "https", field: site, in: "https://example.com/a?b=c", want: "https://example.com/a?b=c"},
		{name: "http not allowed by default", field: site, in: "http://example.com", constraint: "scheme", message: "Website: must start with https://"},
		{name: "http allowed", field: any, in: "http://example.com", want: "http://example.com"},
		{name: "relative", field: site, in: "/just/a/path", constraint: "format"},
		{name: "no host", field: site, in: "https:///path", constraint: "host"},
		{name: "user info", field: site, in: "https://user:pw@example.com", constraint: "format"},
		{name: "loopback literal", field: site, in: "https://127.0.0.1/", constraint: "private_host", message: "Website: must point to a public host"},
		{name: "localhost", field: site, in: "https://localhost:8080/", constraint: "private_host"},
		{name: "decimal IPv4 trick", field: site, in: "https://2130706433/", constraint: "private_host"},
		{name: "private allowed", field: internal, in: "https://10.0.0.1/x", want: "https://10.0.0.1/x"},
		{name: "mailto is not a URL with host", field: site, in: "mailto:ada@example.com", constraint: "format"},
	})
}

func TestSelects(t *testing.T) {
	country := v.Field{Name: "country", Type: v.Select, Label: "Country", Case: v.UpperCase,
		Options: []v.Option{{Value: "US", Title: "United States"}, {Value: "CA", Title: "Canada"}}}
	size := v.Field{Name: "size", Type: v.Select, Options: []v.Option{{Value: "small"}, {Value: "large"}}}
	extras := v.Field{Name: "extras", Type: v.MultiSelect, Label: "Extras", MinItems: v.Ptr(1), MaxItems: v.Ptr(2),
		Options: []v.Option{{Value: "sig", Title: "Signature"}, {Value: "ins", Title: "Insurance"}, {Value: "sat", Title: "Saturday"}}}
	runCases(t, []vcase{
		{name: "by value after case rule", field: country, in: " ca ", want: "CA"},
		{name: "by title", field: country, in: "canada", want: "CA"},
		{name: "not an option", field: country, in: "Mexico", constraint: "option",
			message: "Country: must be one of United States (US), Canada (CA)"},
		{name: "untitled", field: size, in: "LARGE", want: "large"},
		{name: "untitled not an option", field: size, in: "medium", constraint: "option", message: "size: must be one of small, large"},
		{name: "number for select", field: size, in: 3.0, constraint: "option"},
		{name: "multi", field: extras, in: []any{"sig", "Insurance"}, want: []string{"sig", "ins"}},
		{name: "multi Go strings", field: extras, in: []string{"SAT"}, want: []string{"sat"}},
		{name: "multi repeats", field: extras, in: []any{"sig", "Signature"}, constraint: "unique", message: "Extras: must not list a choice twice"},
		{name: "multi too many", field: extras, in: []any{"sig", "ins", "sat"}, constraint: "max_items", message: "Extras: must have at most 2 choices"},
		{name: "multi unknown", field: extras, in: []any{"sig", "gift"}, constraint: "option"},
		{name: "multi not a list", field: extras, in: "sig", constraint: "type"},
		{name: "multi with a number", field: extras, in: []any{"sig", 1.0}, constraint: "type"},
	})
	min2 := v.Field{Name: "m", Type: v.MultiSelect, MinItems: v.Ptr(2), Options: []v.Option{{Value: "a"}, {Value: "b"}}}
	runCases(t, []vcase{{name: "multi too few", field: min2, in: []any{"a"}, constraint: "min_items", message: "m: must have at least 2 choices"}})
}

func TestRequiredDefaultsAndUnknownKeys(t *testing.T) {
	c := compile(t,
		v.Field{Name: "name", Type: v.Text, Label: "Name", Required: true},
		v.Field{Name: "extras", Type: v.MultiSelect, Required: true, Options: []v.Option{{Value: "a"}}},
		v.Field{Name: "note", Type: v.Text},
		v.Field{Name: "count", Type: v.Integer, Default: 2.0},
		v.Field{Name: "fast", Type: v.Boolean, Default: false},
		v.Field{Name: "sizes", Type: v.MultiSelect, Default: []any{"s"}, Options: []v.Option{{Value: "s"}, {Value: "m"}}},
	)
	data, errs := c.Validate(map[string]any{"name": " \t ", "extras": []any{}, "evil": "x"})
	require.Nil(t, data)
	require.Len(t, errs, 2)
	assert.Equal(t, "Name: is required", errs[0].Message)
	assert.Equal(t, "required", errs[1].Constraint)
	assert.Equal(t, "extras", errs[1].Field)

	data, errs = c.Validate(map[string]any{"name": "Ada", "extras": []any{"a"}, "note": "  ", "count": nil, "evil": "x"})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"name": "Ada", "extras": []string{"a"}, "count": int64(2), "fast": false, "sizes": []string{"s"}}, data)

	// A default handed out cannot change the form's own.
	data["sizes"].([]string)[0] = "changed"
	data, _ = c.Validate(map[string]any{"name": "Ada", "extras": []any{"a"}})
	assert.Equal(t, []string{"s"}, data["sizes"])

	data, errs = c.Validate(nil)
	assert.Nil(t, data)
	assert.Len(t, errs, 2)
}

func TestEveryErrorInFieldOrder(t *testing.T) {
	c := compile(t,
		v.Field{Name: "a", Type: v.Number, Required: true},
		v.Field{Name: "b", Type: v.Text, Required: true},
		v.Field{Name: "c", Type: v.Email},
		v.Field{Name: "d", Type: v.Date},
		v.Field{Name: "e", Type: v.Boolean},
	)
	_, errs := c.Validate(map[string]any{"e": "maybe", "d": "yesterday", "c": "nope", "a": "x"})
	var fields []string
	for _, fe := range errs {
		fields = append(fields, fe.Field)
	}
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, fields)
}

func TestCustomChecksSeeOtherAnswers(t *testing.T) {
	zipUS := func(value any, all map[string]any) error {
		if all["country"] == "US" && len(value.(string)) != 5 {
			return errors.New("must be a 5-digit ZIP code for the United States")
		}
		return nil
	}
	called := 0
	c := compile(t,
		v.Field{Name: "postal", Type: v.Text, Label: "Postal code", Case: v.UpperCase, Check: zipUS},
		v.Field{Name: "country", Type: v.Select, Case: v.UpperCase, Options: []v.Option{{Value: "US"}, {Value: "CA"}}},
		v.Field{Name: "qty", Type: v.Integer, Check: func(any, map[string]any) error { called++; return nil }},
		v.Field{Name: "z", Type: v.Text, Required: true},
	)
	_, errs := c.Validate(map[string]any{"postal": "1234", "country": "us", "qty": "x"})
	require.Len(t, errs, 3)
	assert.Equal(t, "Postal code: must be a 5-digit ZIP code for the United States", errs[0].Message)
	assert.Equal(t, "check", errs[0].Constraint)
	assert.Equal(t, "qty", errs[1].Field, "errors stay in field order")
	assert.Equal(t, "z", errs[2].Field)
	assert.Equal(t, 0, called, "a custom check does not run on a field that failed its own checks")

	data, errs := c.Validate(map[string]any{"postal": "k1a 0b1", "country": "ca", "z": "ok", "qty": 1.0})
	require.Empty(t, errs)
	assert.Equal(t, "K1A 0B1", data["postal"])
	assert.Equal(t, 1, called)
}

func TestSizeComesFirst(t *testing.T) {
	c, err := v.Compile(v.Form{MaxAnswerBytes: 64, Fields: []v.Field{{Name: "a", Type: v.Number, Required: true}}})
	require.NoError(t, err)
	_, errs := c.Validate(map[string]any{"junk": strings.Repeat("x", 100), "a": "not a number"})
	require.Len(t, errs, 1, "nothing else is looked at")
	assert.Equal(t, "size", errs[0].Constraint)
	assert.Equal(t, "Answer: is too large (the limit is 64 bytes)", errs[0].Message)

	// Escapes count as JSON would write them.
	_, errs = c.Validate(map[string]any{"a": 1.0, "j": strings.Repeat("<", 10)})
	require.Len(t, errs, 1)
	assert.Equal(t, "size", errs[0].Constraint)
	_, errs = c.Validate(map[string]any{"a": 1.0, "j": strings.Repeat("x", 10)})
	assert.Empty(t, errs)

	big := compile(t, v.Field{Name: "a", Type: v.Text})
	_, errs = big.Validate(map[string]any{"a": strings.Repeat("é", v.DefaultMaxAnswerBytes/2)})
	require.Len(t, errs, 1)
	assert.Equal(t, "size", errs[0].Constraint)
	nested := map[string]any{"x": []any{map[string]any{"y": strings.Repeat("z", v.DefaultMaxAnswerBytes)}}}
	_, errs = big.Validate(nested)
	require.Len(t, errs, 1)
}

// Messages never quote what the person typed, so a sensitive value cannot leak through one.
func TestMessagesNeverQuoteTheValue(t *testing.T) {
	const secret = "S3CRET-v4lue"
	fields := []v.Field{
		{Name: "a", Type: v.Text, Sensitive: true, Pattern: `^\d+$`},
		{Name: "b", Type: v.Text, Sensitive: true, MaxLength: v.Ptr(3)},
		{Name: "c", Type: v.Number, Sensitive: true},
		{Name: "d", Type: v.Email, Sensitive: true},
		{Name: "e", Type: v.URL, Sensitive: true},
		{Name: "f", Type: v.Date, Sensitive: true},
		{Name: "g", Type: v.DateTime, Sensitive: true},
		{Name: "h", Type: v.Boolean, Sensitive: true},
		{Name: "i", Type: v.Select, Sensitive: true, Options: []v.Option{{Value: "x"}}},
		{Name: "j", Type: v.MultiSelect, Sensitive: true, Options: []v.Option{{Value: "x"}}},
		{Name: "k", Type: v.Integer, Sensitive: true},
	}
	c := compile(t, fields...)
	content := map[string]any{}
	for _, f := range fields {
		content[f.Name] = secret
	}
	content["j"] = []any{secret}
	_, errs := c.Validate(content)
	require.Len(t, errs, len(fields))
	for _, fe := range errs {
		assert.NotContains(t, fe.Message, secret)
		assert.NotContains(t, strings.ToLower(fe.Message), strings.ToLower(secret))
	}
}

func TestCompiledFormsAreSafeForConcurrentUse(t *testing.T) {
	c := compile(t,
		v.Field{Name: "n", Type: v.Number, Required: true},
		v.Field{Name: "s", Type: v.MultiSelect, Default: []any{"a"}, Options: []v.Option{{Value: "a"}, {Value: "b"}}},
	)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 200 {
				data, errs := c.Validate(map[string]any{"n": fmt.Sprint(i*1000 + j)})
				if assert.Empty(t, errs) {
					assert.Equal(t, float64(i*1000+j), data["n"])
					data["s"].([]string)[0] = "mutated"
				}
				_ = c.WireSchema()
			}
		})
	}
	wg.Wait()
}

func TestValidatePartialKeepsWhatPassed(t *testing.T) {
	c := compile(t,
		v.Field{Name: "a", Type: v.Number, Required: true},
		v.Field{Name: "b", Type: v.Text, Required: true, Case: v.UpperCase},
		v.Field{Name: "c", Type: v.Text, Check: func(any, map[string]any) error { return errors.New("must be other") }},
		v.Field{Name: "d", Type: v.Boolean, Default: true},
	)
	data, errs := c.ValidatePartial(map[string]any{"a": "x", "b": " ok ", "c": "y"})
	require.Len(t, errs, 2)
	assert.Equal(t, []string{"a", "c"}, []string{errs[0].Field, errs[1].Field})
	assert.Equal(t, map[string]any{"b": "OK", "d": true}, data, "normalised values of the fields that passed")
	full, errs := c.Validate(map[string]any{"a": "x", "b": " ok "})
	assert.Nil(t, full, "Validate keeps nothing when anything failed")
	assert.Len(t, errs, 1)
}
