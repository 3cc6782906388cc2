package tools

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/validator"
)

var shippingForm = map[string]any{"title": "Delivery", "fields": []any{
	map[string]any{"name": "country", "type": "select", "label": "Country", "required": true,
		"options": []any{map[string]any{"value": "US", "title": "United States"}, map[string]any{"value": "DE", "title": "Germany"}}},
	map[string]any{"name": "state", "type": "text", "label": "State", "required": true, "when": map[string]any{"field": "country", "equals": "US"}},
	map[string]any{"name": "vat", "type": "text", "label": "VAT number", "required_when": map[string]any{"field": "country", "equals": "DE"}},
	map[string]any{"name": "weight", "type": "number", "label": "Weight (kg)", "required": true, "exclusive_minimum": 0},
}}

// ask_user speaks the JSON form language's rules in both eras: a required_when error names
// both fields and re-asks only that field; a conditional field comes in a follow-up round.
func TestAskUserRulesInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			srv := newServer(t)
			u := elicittest.Connect(t, srv, era,
				elicittest.Accept(map[string]any{"country": "germany", "weight": "2.5"}),
				elicittest.Accept(map[string]any{"vat": "DE1"}))
			res := u.Call(context.Background(), "ask_user", map[string]any{"message": "Where to?", "form": shippingForm})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, "completed", p["status"])
			assert.Equal(t, map[string]any{"country": "DE", "vat": "DE1", "weight": 2.5}, p["data"])
			prompts := u.Prompts()
			require.Len(t, prompts, 2)
			assert.Contains(t, prompts[1].Message, "VAT number: is required when Country is Germany")

			u = elicittest.Connect(t, srv, era,
				elicittest.Accept(map[string]any{"country": "US", "weight": 1}),
				elicittest.Accept(map[string]any{"state": "ny"}))
			res = u.Call(context.Background(), "ask_user", map[string]any{"message": "Where to?", "form": shippingForm})
			p, err = elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"country": "US", "state": "ny", "weight": 1.0}, p["data"])
			assert.Equal(t, 1.0, p["attempts"], "a follow-up round is not an attempt")
		})
	}
}

// Every generated invalid answer to a form earns, through ask_user, a re-prompt naming the
// field and the constraint.
func TestAskUserReportsEachBrokenConstraint(t *testing.T) {
	form, err := validator.Compile(validator.Form{Fields: []validator.Field{
		{Name: "qty", Type: validator.Integer, Label: "Quantity", Required: true, Minimum: validator.Ptr(1.0), Maximum: validator.Ptr(9.0)},
		{Name: "site", Type: validator.URL, Label: "Site"},
		{Name: "code", Type: validator.Text, Label: "Code", Pattern: "^[A-Z]{3}$"},
	}})
	require.NoError(t, err)
	cases, err := elicittest.Invalid(form, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	srv := newServer(t)
	raw := map[string]any{"fields": []any{
		map[string]any{"name": "qty", "type": "integer", "label": "Quantity", "required": true, "minimum": 1, "maximum": 9},
		map[string]any{"name": "site", "type": "url", "label": "Site"},
		map[string]any{"name": "code", "type": "text", "label": "Code", "pattern": "^[A-Z]{3}$"}}}
	for _, c := range cases {
		u := elicittest.Connect(t, srv, elicittest.Pull, elicittest.Accept(c.Content), elicittest.Decline())
		res := u.Call(context.Background(), "ask_user", map[string]any{"message": "m", "form": raw, "max_attempts": 2})
		p, err := elicittest.Payload(res)
		require.NoError(t, err)
		assert.Equal(t, "declined", p["status"])
		prompts := u.Prompts()
		require.Len(t, prompts, 2, c.Constraint)
		assert.Contains(t, prompts[1].Message, form.Fields()[fieldIndex(form, c.Field)].Label+":", c.Constraint)
	}
}

func fieldIndex(c *validator.Compiled, name string) int {
	for i, f := range c.Fields() {
		if f.Name == name {
			return i
		}
	}
	return -1
}
