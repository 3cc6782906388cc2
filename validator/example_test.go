package validator_test

import (
	"fmt"

	"github.com/elicitd/elicitd/validator"
)

// A form in the JSON form language becomes the exact MCP wire schema; an answer is
// normalised before it is checked, so "  us " is the option US and " 3 " the number 3, and
// each problem names its field and what is expected. (MCP's schema has no exclusive
// bounds: the validator enforces them.)
func Example() {
	form, err := validator.CompileJSON([]byte(`{"title": "Parcel", "fields": [
		{"name": "country", "type": "select", "label": "Country", "required": true,
		 "options": [{"value": "US", "title": "United States"}, {"value": "CA", "title": "Canada"}]},
		{"name": "weight", "type": "number", "label": "Weight (kg)", "required": true, "exclusive_minimum": 0}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(form.WireSchema()))

	data, errs := form.Validate(map[string]any{"country": "  us ", "weight": " 3 "})
	fmt.Println(data, len(errs))

	_, errs = form.Validate(map[string]any{"country": "Mars", "weight": "-1"})
	fmt.Println(validator.JoinMessages(errs))
	// Output:
	// {"type":"object","properties":{"country":{"type":"string","title":"Country","oneOf":[{"const":"US","title":"United States"},{"const":"CA","title":"Canada"}]},"weight":{"type":"number","title":"Weight (kg)"}},"required":["country","weight"]}
	// map[country:US weight:3] 0
	// Country: must be one of United States (US), Canada (CA)
	// Weight (kg): must be a positive, finite number
}
