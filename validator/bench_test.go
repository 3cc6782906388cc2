package validator_test

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	v "github.com/elicitd/elicitd/validator"
)

// benchForm is a 20-field form mixing every type and most constraints.
func benchForm() v.Form {
	countries := []v.Option{{Value: "US", Title: "United States"}, {Value: "CA", Title: "Canada"}, {Value: "GB", Title: "United Kingdom"}, {Value: "PR", Title: "Puerto Rico"}}
	return v.Form{Title: "Shipment", Fields: []v.Field{
		{Name: "shipper_name", Type: v.Text, Label: "Shipper name", Required: true, MaxLength: v.Ptr(35)},
		{Name: "shipper_phone", Type: v.Text, Label: "Shipper phone", Pattern: `^[0-9+() -]{7,20}$`},
		{Name: "shipper_email", Type: v.Email, Label: "Shipper email"},
		{Name: "shipper_address", Type: v.Text, Label: "Address line", Required: true, MaxLength: v.Ptr(35)},
		{Name: "shipper_city", Type: v.Text, Label: "City", Required: true, MaxLength: v.Ptr(30)},
		{Name: "shipper_state", Type: v.Text, Label: "State", Case: v.UpperCase, Pattern: `^[A-Z]{2}$`},
		{Name: "shipper_postal", Type: v.Text, Label: "Postal code", Case: v.UpperCase, MaxLength: v.Ptr(10)},
		{Name: "shipper_country", Type: v.Select, Label: "Country", Required: true, Case: v.UpperCase, Options: countries},
		{Name: "to_name", Type: v.Text, Label: "Recipient", Required: true, MaxLength: v.Ptr(35)},
		{Name: "to_country", Type: v.Select, Label: "Recipient country", Required: true, Options: countries},
		{Name: "weight", Type: v.Number, Label: "Package weight", Required: true, ExclusiveMinimum: v.Ptr(0.0), Maximum: v.Ptr(70.0)},
		{Name: "length", Type: v.Number, Label: "Length", Minimum: v.Ptr(1.0), Maximum: v.Ptr(270.0)},
		{Name: "packages", Type: v.Integer, Label: "Packages", Minimum: v.Ptr(1.0), Maximum: v.Ptr(200.0)},
		{Name: "signature", Type: v.Boolean, Label: "Signature required"},
		{Name: "saturday", Type: v.Boolean, Label: "Saturday delivery", Default: false},
		{Name: "ship_date", Type: v.Date, Label: "Ship on"},
		{Name: "pickup_at", Type: v.DateTime, Label: "Pickup"},
		{Name: "tracking_url", Type: v.URL, Label: "Tracking page"},
		{Name: "service", Type: v.Select, Label: "Service", Options: []v.Option{{Value: "01"}, {Value: "02"}, {Value: "03"}, {Value: "12"}}},
		{Name: "extras", Type: v.MultiSelect, Label: "Extras", MaxItems: v.Ptr(3), Options: []v.Option{{Value: "ins", Title: "Insurance"}, {Value: "cod", Title: "Cash on delivery"}, {Value: "adult", Title: "Adult signature"}}},
	}}
}

// benchAnswer is a valid answer, as a JSON decoder hands it over.
func benchAnswer() map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(`{
		"shipper_name": "Ada Lovelace", "shipper_phone": "+1 555 010 0000", "shipper_email": "ada@example.com",
		"shipper_address": "1 Main St", "shipper_city": "Springfield", "shipper_state": "IL", "shipper_postal": "62701",
		"shipper_country": "US", "to_name": "Grace Hopper", "to_country": "CA", "weight": 5.5, "length": 30,
		"packages": 2, "signature": true, "saturday": false, "ship_date": "2026-11-23", "pickup_at": "2026-11-23T09:00:00Z",
		"tracking_url": "https://example.com/track", "service": "03", "extras": ["ins", "cod"]
	}`), &m); err != nil {
		panic(err)
	}
	return m
}

func BenchmarkValidate20Fields(b *testing.B) {
	c, err := v.Compile(benchForm())
	if err != nil {
		b.Fatal(err)
	}
	answer := benchAnswer()
	if _, errs := c.Validate(answer); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, errs := c.Validate(answer)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// The go-sdk's validator on the equivalent schema: the wire schema plus the constraints that
// stay server-side (patterns, exclusive bounds), resolved once.
func BenchmarkJSONSchemaGo20Fields(b *testing.B) {
	c, err := v.Compile(benchForm())
	if err != nil {
		b.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(c.WireSchema(), &s); err != nil {
		b.Fatal(err)
	}
	for _, f := range benchForm().Fields {
		p := s.Properties[f.Name]
		p.Pattern = f.Pattern
		p.ExclusiveMinimum = f.ExclusiveMinimum
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		b.Fatal(err)
	}
	answer := benchAnswer()
	if err := resolved.Validate(answer); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := resolved.Validate(answer); err != nil {
			b.Fatal(err)
		}
	}
}
