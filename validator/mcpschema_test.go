package validator_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v "github.com/elicitd/elicitd/validator"
)

func TestFromMCPSchema(t *testing.T) {
	raw := json.RawMessage(`{
		"type": "object",
		"properties": {
			"zname": {"type": "string", "title": "Name", "description": "Full name", "minLength": 2, "maxLength": 10, "default": "Ada"},
			"email": {"type": "string", "format": "email"},
			"site": {"type": "string", "format": "uri"},
			"day": {"type": "string", "format": "date"},
			"at": {"type": "string", "format": "date-time"},
			"age": {"type": "integer", "minimum": 0, "maximum": 150},
			"score": {"type": "number", "exclusiveMinimum": 0},
			"ok": {"type": "boolean", "default": true},
			"legacy": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
			"plain": {"type": "string", "enum": ["x", "y"]},
			"titled": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
			"multi": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
			"multit": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}
		},
		"required": ["zname", "legacy"]
	}`)
	form, err := v.FromMCPSchema(raw)
	require.NoError(t, err)
	var names []string
	types := map[string]v.Type{}
	for _, f := range form.Fields {
		names = append(names, f.Name)
		types[f.Name] = f.Type
	}
	assert.Equal(t, []string{"zname", "email", "site", "day", "at", "age", "score", "ok", "legacy", "plain", "titled", "multi", "multit"}, names, "property order kept")
	assert.Equal(t, map[string]v.Type{"zname": v.Text, "email": v.Email, "site": v.URL, "day": v.Date, "at": v.DateTime, "age": v.Integer,
		"score": v.Number, "ok": v.Boolean, "legacy": v.Select, "plain": v.Select, "titled": v.Select, "multi": v.MultiSelect, "multit": v.MultiSelect}, types)
	assert.Equal(t, []v.Option{{Value: "r", Title: "Red"}, {Value: "g", Title: "Green"}}, form.Fields[8].Options)
	assert.True(t, form.Fields[0].Required)
	assert.True(t, form.Fields[8].Required)
	assert.False(t, form.Fields[1].Required)
	assert.Equal(t, "Name", form.Fields[0].Label)
	assert.Equal(t, 2, *form.Fields[0].MinLength)

	c, err := v.Compile(form)
	require.NoError(t, err)
	wire := string(c.WireSchema())
	assert.NotContains(t, wire, "enumNames", "accepted in, never sent out")
	assert.Contains(t, wire, `"legacy":{"type":"string","title":"legacy","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]}`)
	checkWireSubset(t, c.WireSchema())

	_, errs := c.Validate(map[string]any{"zname": "Grace", "legacy": "green", "score": "0"})
	require.Len(t, errs, 1)
	assert.Equal(t, "score", errs[0].Field, "exclusiveMinimum is kept server-side")
	data, errs := c.Validate(map[string]any{"zname": "Grace", "legacy": "green"})
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{"zname": "Grace", "legacy": "g", "ok": true}, data)
}

func TestFromMCPSchemaReportsEveryProblem(t *testing.T) {
	_, err := v.FromMCPSchema(json.RawMessage(`{
		"type": "object",
		"properties": {
			"nested": {"type": "object", "properties": {"a": {"type": "string"}}},
			"both": {"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]},
			"fmt": {"type": "string", "format": "ipv4"},
			"names": {"type": "string", "enum": ["a", "b"], "enumNames": ["A"]},
			"arr": {"type": "array"},
			"odd": {"type": "null"},
			"notype": {"title": "x"}
		},
		"required": ["ghost"]
	}`))
	var de *v.DefinitionError
	require.True(t, errors.As(err, &de))
	byField := map[string]string{}
	for _, p := range de.Problems {
		byField[p.Field] = p.Message
	}
	assert.Contains(t, byField["nested"], "nested object")
	assert.Contains(t, byField["both"], `both "enum" and "oneOf"`)
	assert.Contains(t, byField["fmt"], `format "ipv4"`)
	assert.Contains(t, byField["names"], "2 enum values but 1 enumNames")
	assert.Contains(t, byField["arr"], `without "items"`)
	assert.Contains(t, byField["odd"], `unsupported type "null"`)
	assert.Contains(t, byField["notype"], `no "type"`)
	assert.Contains(t, byField["ghost"], "not among the properties")
	assert.Len(t, de.Problems, 8)

	for _, bad := range []string{`[]`, `{"type":"string"}`, `{"type":"object","properties":[1]}`, `not json`} {
		_, err := v.FromMCPSchema(json.RawMessage(bad))
		require.Error(t, err, bad)
		assert.True(t, errors.As(err, &de), bad)
	}
	_, err = v.CompileMCPSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","enum":["x","x"]}}}`))
	require.ErrorContains(t, err, "appears twice", "compiling finds what the schema reading let through")
}
