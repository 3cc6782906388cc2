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
//	    {"name": "state", "type": "text", "label": "State", "required": true,
//	     "when": {"field": "country", "equals": "US"}},
//	    {"name": "postal_code", "type": "text", "label": "Postal code", "pattern": "^[0-9A-Z -]{3,10}$"},
//	    {"name": "signature", "type": "boolean", "label": "Signature required", "default": false},
//	    {"name": "ship_on", "type": "date", "label": "Ship on"},
//	    {"name": "invoice", "type": "file", "label": "Invoice", "accept": ["application/pdf"]}
//	  ]
//	}
//
// # Field types
//
// The "type" of a field ([Type]), and what its answer is once validated:
//
//   - text: a line of text (a string); "widget": "multiline" asks for several lines;
//   - number: a finite number (float64); integer: a whole number (int64);
//   - boolean: yes or no (bool);
//   - date: YYYY-MM-DD, a real calendar date; date_time: RFC 3339 (both strings);
//   - email: a bare address; url: an absolute URL with a host, https only unless
//     url_schemes says more, and no non-public host unless allow_private_hosts (strings);
//   - select: one of the options (its value, a string); multi_select: some of them, each
//     at most once ([]string);
//   - file: a file, asked only on elicitd's page in URL mode, never in form mode (an
//     [*Upload]).
//
// # Keys
//
// A form takes "title" and "fields". A field takes:
//
//   - name (required): the key its answer is stored under; type (required): one of the
//     types above;
//   - label: shown to the person (the name when empty); description: help text;
//     placeholder: sample text in an empty input; widget: "multiline" or "password" (a
//     password is a secret, as sensitive);
//   - required; default: the answer when an optional field is left blank (a valid answer
//     itself; not for files);
//   - options ([{"value", "title"}], for select and multi_select); min_items, max_items
//     (multi_select);
//   - min_length, max_length, pattern (RE2, checked server-side), for text, email and url;
//     case ("upper" or "lower"), for those and select and multi_select;
//   - minimum, maximum, exclusive_minimum, exclusive_maximum, for number and integer;
//   - url_schemes, allow_private_hosts, for url;
//   - accept (media types, "image/*" allowed, checked against the bytes), max_bytes, for
//     file;
//   - sensitive: a secret (a password, an API key), never echoed back, logged or quoted,
//     and asked only on elicitd's page;
//   - when ({"field", "equals" | "one_of" | "present"}, a [Condition]): asked only once an
//     earlier field's answer matches, in a follow-up round; required_when: required only
//     then; compare ({"op", "field"}, a [Comparison]): lt, le, gt, ge, eq or ne another
//     field's answer.
//
// Unknown keys are an error, and so is a constraint on a type it does not apply to
// (min_length on a number, accept on text). In Go,
// [Field.Check] adds a custom check, and [Form.MaxAnswerBytes] bounds an answer's size.
//
// # Compiling and validating
//
// [Compile] (or [CompileJSON], or [CompileMCPSchema] for a raw MCP requestedSchema) checks a
// definition and reports every problem at once. The result, a [*Compiled], gives the exact
// MCP wire schema ([Compiled.WireSchema]) and validates answers ([Compiled.Validate]),
// returning every problem as a [FieldError] with a message written for a person. A form
// with conditional fields is asked in rounds ([Compiled.Next]); one that mixes fields only
// the page may ask ([Field.NeedsPage]) with plain ones splits into a form-mode round and a
// page round ([Compiled.SplitForPage]).
//
// [CheckURL] and [GuardDialer] keep URLs a person gives from reaching non-public addresses.
package validator
