package validator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// mcpProperty is one property of an MCP requestedSchema, as a client or agent may send it.
type mcpProperty struct {
	Type             string          `json:"type"`
	Title            string          `json:"title"`
	Description      string          `json:"description"`
	Format           string          `json:"format"`
	MinLength        *int            `json:"minLength"`
	MaxLength        *int            `json:"maxLength"`
	Pattern          string          `json:"pattern"`
	Minimum          *float64        `json:"minimum"`
	Maximum          *float64        `json:"maximum"`
	ExclusiveMinimum *float64        `json:"exclusiveMinimum"`
	ExclusiveMaximum *float64        `json:"exclusiveMaximum"`
	Enum             []string        `json:"enum"`
	EnumNames        []string        `json:"enumNames"` // legacy titles for enum, accepted in, never sent out
	OneOf            []mcpTitled     `json:"oneOf"`
	AnyOf            []mcpTitled     `json:"anyOf"`
	Items            *mcpProperty    `json:"items"`
	MinItems         *int            `json:"minItems"`
	MaxItems         *int            `json:"maxItems"`
	Default          json.RawMessage `json:"default"`
}

type mcpTitled struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

var mcpFormats = map[string]Type{"": Text, "email": Email, "uri": URL, "date": Date, "date-time": DateTime}

// FromMCPSchema turns a raw MCP requestedSchema (a flat object of primitive properties, as
// in the 2025-11-25 spec, legacy enumNames included) into a Form that keeps the properties'
// order. Anything outside that subset is reported, every problem at once, as a
// *DefinitionError. Compile the result to use it.
func FromMCPSchema(raw json.RawMessage) (Form, error) {
	var root struct {
		Type       string          `json:"type"`
		Title      string          `json:"title"`
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	fail := func(msg string) (Form, error) {
		return Form{}, &DefinitionError{Problems: []Problem{{Field: "schema", Message: msg}}}
	}
	if len(raw) > MaxFormBytes {
		return fail(fmt.Sprintf("is %d bytes of JSON; the limit is %d", len(raw), MaxFormBytes))
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		return fail("is not a JSON object with properties: " + err.Error())
	}
	if root.Type != "object" {
		return fail(`must have "type": "object"`)
	}
	names, props, err := orderedProperties(root.Properties)
	if err != nil {
		return fail("has unreadable properties: " + err.Error())
	}
	form := Form{Title: root.Title}
	var problems []Problem
	for i, name := range names {
		fd, probs := fieldFromMCP(name, props[i])
		fd.Required = slices.Contains(root.Required, name)
		for _, p := range probs {
			problems = append(problems, Problem{Field: name, Message: p})
		}
		form.Fields = append(form.Fields, fd)
	}
	for _, r := range root.Required {
		if !slices.Contains(names, r) {
			problems = append(problems, Problem{Field: r, Message: "is required but not among the properties"})
		}
	}
	if len(problems) > 0 {
		return Form{}, &DefinitionError{Problems: problems}
	}
	return form, nil
}

// orderedProperties decodes a JSON object's members in the order they appear.
func orderedProperties(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("properties must be an object")
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if slices.Contains(names, name) {
			return nil, nil, fmt.Errorf("property %q appears twice", name)
		}
		names = append(names, name)
		values = append(values, v)
	}
	return names, values, nil
}

func fieldFromMCP(name string, raw json.RawMessage) (Field, []string) {
	var p mcpProperty
	if err := json.Unmarshal(raw, &p); err != nil {
		return Field{Name: name}, []string{"is not a primitive property: " + err.Error()}
	}
	fd := Field{
		Name: name, Label: p.Title, Description: p.Description,
		MinLength: p.MinLength, MaxLength: p.MaxLength, Pattern: p.Pattern,
		Minimum: p.Minimum, Maximum: p.Maximum, ExclusiveMinimum: p.ExclusiveMinimum, ExclusiveMaximum: p.ExclusiveMaximum,
	}
	var probs []string
	if len(p.Default) > 0 && string(p.Default) != "null" {
		if err := json.Unmarshal(p.Default, &fd.Default); err != nil {
			probs = append(probs, "has an unreadable default")
		}
	}
	switch p.Type {
	case "string", "":
		switch {
		case len(p.Enum) > 0 && len(p.OneOf) > 0:
			probs = append(probs, `has both "enum" and "oneOf"; use one`)
		case len(p.Enum) > 0:
			fd.Type = Select
			if len(p.EnumNames) > 0 && len(p.EnumNames) != len(p.Enum) {
				probs = append(probs, fmt.Sprintf("has %d enum values but %d enumNames", len(p.Enum), len(p.EnumNames)))
			}
			for i, v := range p.Enum {
				o := Option{Value: v}
				if i < len(p.EnumNames) {
					o.Title = p.EnumNames[i]
				}
				fd.Options = append(fd.Options, o)
			}
		case len(p.OneOf) > 0:
			fd.Type = Select
			fd.Options = titledToOptions(p.OneOf)
		case p.Type == "":
			probs = append(probs, `has no "type"`)
		default:
			t, ok := mcpFormats[p.Format]
			if !ok {
				probs = append(probs, fmt.Sprintf("has format %q; expected email, uri, date or date-time", p.Format))
			}
			fd.Type = t
		}
	case "number":
		fd.Type = Number
	case "integer":
		fd.Type = Integer
	case "boolean":
		fd.Type = Boolean
	case "array":
		fd.Type = MultiSelect
		fd.MinItems, fd.MaxItems = p.MinItems, p.MaxItems
		switch {
		case p.Items == nil:
			probs = append(probs, `is an array without "items"`)
		case len(p.Items.Enum) > 0:
			for i, v := range p.Items.Enum {
				o := Option{Value: v}
				if i < len(p.Items.EnumNames) {
					o.Title = p.Items.EnumNames[i]
				}
				fd.Options = append(fd.Options, o)
			}
		case len(p.Items.AnyOf) > 0:
			fd.Options = titledToOptions(p.Items.AnyOf)
		case len(p.Items.OneOf) > 0:
			fd.Options = titledToOptions(p.Items.OneOf)
		default:
			probs = append(probs, `is an array whose items have neither "enum" nor "anyOf"`)
		}
	case "object":
		probs = append(probs, "is a nested object; form mode allows only flat primitive properties")
	default:
		probs = append(probs, fmt.Sprintf("has unsupported type %q; expected string, number, integer, boolean or array", p.Type))
	}
	return fd, probs
}

func titledToOptions(ts []mcpTitled) []Option {
	out := make([]Option, len(ts))
	for i, t := range ts {
		out[i] = Option{Value: t.Const, Title: t.Title}
	}
	return out
}

// CompileMCPSchema is FromMCPSchema followed by Compile.
func CompileMCPSchema(raw json.RawMessage) (*Compiled, error) {
	f, err := FromMCPSchema(raw)
	if err != nil {
		return nil, err
	}
	return Compile(f)
}
