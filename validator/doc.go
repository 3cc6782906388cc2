// Package validator turns form definitions into the MCP wire schema and checks the answers a
// person gives against them, after normalising those answers.
//
// A [Form] is written in Go or in JSON; its JSON form is public API (agents send it to the
// ask_user tool):
//
//	{
//	  "title": "Delivery",
//	  "fields": [
//	    {"name": "weight_kg", "type": "number", "label": "Package weight (kg)",
//	     "required": true, "exclusive_minimum": 0, "maximum": 70},
//	    {"name": "country", "type": "select", "label": "Country", "required": true, "case": "upper",
//	     "options": [{"value": "US", "title": "United States"}, {"value": "CA", "title": "Canada"}]},
//	    {"name": "postal_code", "type": "text", "label": "Postal code", "pattern": "^[0-9A-Z -]{3,10}$"},
//	    {"name": "signature", "type": "boolean", "label": "Signature required", "default": false},
//	    {"name": "ship_on", "type": "date", "label": "Ship on"}
//	  ]
//	}
//
// Field types: text, number, integer, boolean, date, date_time, email, url, select,
// multi_select. Field keys: name, type, label, description, required, default, options
// ([{value, title}]), min_length, max_length, pattern (RE2), minimum, maximum,
// exclusive_minimum, exclusive_maximum, min_items, max_items, url_schemes,
// allow_private_hosts, sensitive, case ("upper" or "lower"). Unknown keys are an error.
//
// [Compile] (or [CompileJSON], or [CompileMCPSchema] for a raw MCP requestedSchema) checks a
// definition and reports every problem at once. The result, a [*Compiled], gives the exact
// MCP wire schema ([Compiled.WireSchema]) and validates answers ([Compiled.Validate]),
// returning every problem as a [FieldError] with a message written for a person.
//
// [CheckURL] and [GuardDialer] keep URLs a person gives from reaching non-public addresses.
package validator
