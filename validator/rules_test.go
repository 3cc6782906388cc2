package validator_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v "github.com/elicitd/elicitd/validator"
)

func wireFields(t *testing.T, c *v.Compiled) (names []string, required []string) {
	t.Helper()
	var w struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	require.NoError(t, json.Unmarshal(c.WireSchema(), &w))
	for name := range w.Properties {
		names = append(names, name)
	}
	return names, w.Required
}

const conditionalForm = `{"title": "Billing", "fields": [
	{"name": "country", "type": "select", "label": "Country", "required": true,
	 "options": [{"value": "US", "title": "United States"}, {"value": "DE", "title": "Germany"}]},
	{"name": "state", "type": "text", "label": "State", "required": true, "when": {"field": "country", "equals": "US"}},
	{"name": "vat", "type": "text", "label": "VAT number", "required_when": {"field": "country", "one_of": ["DE"]}},
	{"name": "county", "type": "text", "label": "County", "when": {"field": "state", "present": true}},
	{"name": "notes", "type": "text", "label": "Notes", "widget": "multiline", "placeholder": "anything else"}]}`

func TestConditionalFieldsAreAskedInAFollowUpRound(t *testing.T) {
	c, err := v.CompileJSON([]byte(conditionalForm))
	require.NoError(t, err)
	assert.True(t, c.Conditional())
	assert.Equal(t, 3, c.Rounds(), "country, then state, then county")
	names, req := wireFields(t, c)
	assert.ElementsMatch(t, []string{"country", "vat", "notes"}, names, "conditional fields wait for their round")
	assert.Equal(t, []string{"country"}, req, "required_when is checked server-side, not sent as required")

	// Germany: the VAT number becomes required, and the message names both fields.
	_, errs := c.Validate(map[string]any{"country": "germany"})
	require.Len(t, errs, 1)
	assert.Equal(t, v.FieldError{Field: "vat", Label: "VAT number", Constraint: "required",
		Message: "VAT number: is required when Country is Germany"}, errs[0])
	data, errs := c.Validate(map[string]any{"country": "DE", "vat": "DE123"})
	require.Empty(t, errs)
	assert.Nil(t, c.Next(data), "the state is asked only for the United States")
	assert.Equal(t, map[string]any{"country": "DE", "vat": "DE123"}, data)

	// The United States: a follow-up asks for the state only, keeping the first answers.
	data, errs = c.Validate(map[string]any{"country": "US", "notes": "ring twice"})
	require.Empty(t, errs)
	next := c.Next(data)
	require.NotNil(t, next)
	names, req = wireFields(t, next)
	assert.Equal(t, []string{"state"}, names)
	assert.Equal(t, []string{"state"}, req)
	_, errs = next.Validate(map[string]any{})
	require.Len(t, errs, 1)
	assert.Equal(t, "required", errs[0].Constraint)
	data, errs = next.Validate(map[string]any{"state": "CA", "country": "DE"})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"country": "US", "state": "CA", "notes": "ring twice"}, data, "kept answers cannot be changed")
	third := next.Next(data)
	require.NotNil(t, third, "county depends on the state")
	names, _ = wireFields(t, third)
	assert.Equal(t, []string{"county"}, names)
	data, errs = third.Validate(map[string]any{})
	require.Empty(t, errs)
	assert.Nil(t, third.Next(data))
}

func TestComparisonsNameBothFields(t *testing.T) {
	c, err := v.CompileJSON([]byte(`{"fields": [
		{"name": "check_in", "type": "date", "label": "Check-in", "required": true},
		{"name": "check_out", "type": "date", "label": "Check-out", "required": true, "compare": {"op": "gt", "field": "check_in"}},
		{"name": "adults", "type": "integer", "label": "Adults"},
		{"name": "beds", "type": "integer", "label": "Beds", "compare": {"op": "le", "field": "adults"}},
		{"name": "email", "type": "email", "label": "Email"},
		{"name": "email2", "type": "email", "label": "Email again", "compare": {"op": "eq", "field": "email"}}]}`))
	require.NoError(t, err)
	data, errs := c.Validate(map[string]any{"check_in": "2026-12-03", "check_out": "2026-12-05", "adults": 2, "beds": "2",
		"email": "a@example.com", "email2": " A@example.com "})
	require.Empty(t, errs)
	assert.Equal(t, "2026-12-05", data["check_out"])

	data, errs, retry := c.Keep(map[string]any{"check_in": "2026-12-03", "check_out": "2026-12-03", "adults": 1, "beds": 3,
		"email": "a@example.com", "email2": "b@example.com"})
	assert.Nil(t, data)
	require.Len(t, errs, 3)
	assert.Equal(t, v.FieldError{Field: "check_out", Label: "Check-out", Constraint: "compare", Message: "Check-out: must be after Check-in"}, errs[0])
	assert.Equal(t, "Beds: must be at most Adults", errs[1].Message)
	assert.Equal(t, "Email again: must equal Email", errs[2].Message)
	names, _ := wireFields(t, retry)
	assert.ElementsMatch(t, []string{"check_out", "beds", "email2"}, names, "the re-prompt asks only the fields at fault")

	_, errs = c.Validate(map[string]any{"check_in": "2026-12-03", "check_out": "2026-12-04", "beds": 3})
	assert.Empty(t, errs, "a comparison with an unanswered field is not made")
}

func TestRulesAreCheckedWhenCompiled(t *testing.T) {
	for form, want := range map[string]string{
		`{"fields":[{"name":"a","type":"text","when":{"field":"b","present":true}},{"name":"b","type":"text"}]}`:              `a: when names field "b", which comes after it`,
		`{"fields":[{"name":"a","type":"text","when":{"field":"zz","present":true}}]}`:                                        `a: when names field "zz", which is not another field`,
		`{"fields":[{"name":"b","type":"text"},{"name":"a","type":"text","when":{"field":"b","present":true,"equals":"x"}}]}`: "a: when must have exactly one of equals, one_of and present",
		`{"fields":[{"name":"b","type":"text"},{"name":"a","type":"text","required_when":{"field":"b"}}]}`:                    "a: required_when must have exactly one of",
		`{"fields":[{"name":"b","type":"text"},{"name":"a","type":"text","compare":{"op":"lt","field":"b"}}]}`:                `a: compare lt with "b": a text and a text do not compare that way`,
		`{"fields":[{"name":"b","type":"date"},{"name":"a","type":"number","compare":{"op":"lt","field":"b"}}]}`:              "do not compare that way",
		`{"fields":[{"name":"b","type":"number"},{"name":"a","type":"number","compare":{"op":"before","field":"b"}}]}`:        `a: compare has op "before"`,
		`{"fields":[{"name":"a","type":"text","widget":"slider"}]}`:                                                           `a: has widget "slider"`,
		`{"fields":[{"name":"a","type":"number","widget":"multiline"}]}`:                                                      "only text fields take",
	} {
		_, err := v.CompileJSON([]byte(form))
		require.Error(t, err, form)
		assert.Contains(t, err.Error(), want, form)
	}
	c, err := v.CompileJSON([]byte(`{"fields":[{"name":"pin","type":"text","widget":"password"}]}`))
	require.NoError(t, err)
	assert.True(t, c.NeedsPage(), "a password widget is a sensitive field, asked through the page")
}

func TestHintsAreThoseOfTheFieldsAskedNow(t *testing.T) {
	c, err := v.CompileJSON([]byte(conditionalForm))
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]string{"notes": {"widget": "multiline", "placeholder": "anything else"}}, c.Hints())
	next := c.Next(map[string]any{"country": "US"})
	require.NotNil(t, next)
	assert.Nil(t, next.Hints(), "notes was asked in the first round")
}
