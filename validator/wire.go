package validator

import (
	"bytes"
	"encoding/json"
)

// The wire schema of a form, as Compiled.WireSchema describes it.

type wireProperty struct {
	Type        string       `json:"type"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Format      string       `json:"format,omitempty"`
	MinLength   *int         `json:"minLength,omitempty"`
	MaxLength   *int         `json:"maxLength,omitempty"`
	Minimum     *float64     `json:"minimum,omitempty"`
	Maximum     *float64     `json:"maximum,omitempty"`
	Enum        []string     `json:"enum,omitempty"`
	OneOf       []wireTitled `json:"oneOf,omitempty"`
	Items       *wireItems   `json:"items,omitempty"`
	MinItems    *int         `json:"minItems,omitempty"`
	MaxItems    *int         `json:"maxItems,omitempty"`
	Default     any          `json:"default,omitempty"` // a nil default is left out
}

type wireItems struct {
	Type  string       `json:"type,omitempty"`
	Enum  []string     `json:"enum,omitempty"`
	AnyOf []wireTitled `json:"anyOf,omitempty"`
}

type wireTitled struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

var wireFormats = map[Type]string{Email: "email", URL: "uri", Date: "date", DateTime: "date-time"}

func buildWire(fields []compiledField) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	first := true
	for i := range fields {
		f := &fields[i]
		if f.kept || f.stage != stageAsk || f.Type == File {
			continue // answered before, conditional (not asked now), or a file (never in form mode)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		name, _ := json.Marshal(f.Name)
		b.Write(name)
		b.WriteByte(':')
		prop, _ := json.Marshal(f.wireProperty()) // plain data: cannot fail
		b.Write(prop)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		req, _ := json.Marshal(required)
		b.WriteString(`,"required":`)
		b.Write(req)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func (f *compiledField) wireProperty() wireProperty {
	p := wireProperty{Title: f.label, Description: f.Description, Default: f.def}
	switch f.Type {
	case Text, Email, URL, Date, DateTime:
		p.Type = "string"
		p.Format = wireFormats[f.Type]
		p.MinLength, p.MaxLength = f.MinLength, f.MaxLength
	case Number:
		p.Type = "number"
		p.Minimum, p.Maximum = f.Minimum, f.Maximum
	case Integer:
		p.Type = "integer"
		p.Minimum, p.Maximum = f.Minimum, f.Maximum
	case Boolean:
		p.Type = "boolean"
	case Select:
		p.Type = "string"
		if f.titled {
			p.OneOf = f.titledOptions()
		} else {
			p.Enum = f.optionValues()
		}
	case MultiSelect:
		p.Type = "array"
		if f.titled {
			p.Items = &wireItems{AnyOf: f.titledOptions()}
		} else {
			p.Items = &wireItems{Type: "string", Enum: f.optionValues()}
		}
		p.MinItems, p.MaxItems = f.MinItems, f.MaxItems
	}
	return p
}

func (f *compiledField) optionValues() []string {
	out := make([]string, len(f.Options))
	for i, o := range f.Options {
		out[i] = o.Value
	}
	return out
}

// titledOptions gives every option a title (its value when it has none): the spec requires
// a title on each titled entry.
func (f *compiledField) titledOptions() []wireTitled {
	out := make([]wireTitled, len(f.Options))
	for i, o := range f.Options {
		out[i] = wireTitled{Const: o.Value, Title: o.Title}
		if o.Title == "" {
			out[i].Title = o.Value
		}
	}
	return out
}
