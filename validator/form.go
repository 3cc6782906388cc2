package validator

// Type is the kind of value a field asks for.
type Type string

// The field types. In JSON a field's "type" is one of these strings.
const (
	Text        Type = "text"         // a line of text
	Number      Type = "number"       // a finite number
	Integer     Type = "integer"      // a whole number
	Boolean     Type = "boolean"      // yes or no
	Date        Type = "date"         // YYYY-MM-DD, a real calendar date
	DateTime    Type = "date_time"    // RFC 3339, e.g. 2026-11-22T10:00:00Z
	Email       Type = "email"        // a bare address, e.g. ada@example.com
	URL         Type = "url"          // an absolute URL with a host; https only unless url_schemes says more
	Select      Type = "select"       // one of the options
	MultiSelect Type = "multi_select" // some of the options, each at most once
	File        Type = "file"         // a file, asked through elicitd's page (URL mode); the answer is an *Upload
)

// Case is a case rule applied to a text-like answer after trimming.
type Case string

// The case rules.
const (
	KeepCase  Case = ""
	UpperCase Case = "upper"
	LowerCase Case = "lower"
)

// Form is a form definition: a title and fields in the order they are asked.
//
// A Form is plain data; Compile checks it and turns it into a *Compiled that builds the wire
// schema and validates answers. Its JSON form is public API (the ask_user tool takes it):
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
type Form struct {
	Title  string  `json:"title,omitempty"`
	Fields []Field `json:"fields"`
	// MaxAnswerBytes limits the size of a whole answer as JSON; 0 means DefaultMaxAnswerBytes.
	// An answer over it is refused with one error before anything in it is looked at.
	MaxAnswerBytes int `json:"-"`
}

// DefaultMaxAnswerBytes is the answer size limit when a Form sets none: 1 MiB.
const DefaultMaxAnswerBytes = 1 << 20

// Field is one question. Name is the flat key the answer is stored under.
type Field struct {
	Name        string   `json:"name"`
	Type        Type     `json:"type"`
	Label       string   `json:"label,omitempty"`       // shown to the person; Name when empty
	Description string   `json:"description,omitempty"` // help text
	Required    bool     `json:"required,omitempty"`
	Default     any      `json:"default,omitempty"` // used when an optional field is left blank
	Options     []Option `json:"options,omitempty"` // for select and multi_select

	// Constraints. Pointers distinguish "not set" from zero.
	MinLength        *int     `json:"min_length,omitempty"` // code points, for text-like fields
	MaxLength        *int     `json:"max_length,omitempty"`
	Pattern          string   `json:"pattern,omitempty"` // RE2, must match somewhere (anchor it with ^...$); kept server-side
	Minimum          *float64 `json:"minimum,omitempty"`
	Maximum          *float64 `json:"maximum,omitempty"`
	ExclusiveMinimum *float64 `json:"exclusive_minimum,omitempty"` // kept server-side
	ExclusiveMaximum *float64 `json:"exclusive_maximum,omitempty"` // kept server-side
	MinItems         *int     `json:"min_items,omitempty"`         // for multi_select
	MaxItems         *int     `json:"max_items,omitempty"`
	URLSchemes       []string `json:"url_schemes,omitempty"` // for url; default ["https"]
	// AllowPrivateHosts lets a url field name a loopback, private or otherwise non-public
	// host. By default such URLs are refused.
	AllowPrivateHosts bool `json:"allow_private_hosts,omitempty"`
	// Accept lists the media types a file field takes ("application/pdf", "image/*"),
	// checked against the type sniffed from the bytes; empty takes any.
	Accept []string `json:"accept,omitempty"`
	// MaxBytes limits a file field's size; 0 means DefaultMaxFileBytes.
	MaxBytes int64 `json:"max_bytes,omitempty"`

	// Sensitive marks a secret (a password, an API key): it is never echoed back, logged or
	// quoted. The MCP spec forbids asking for secrets in form mode, so a sensitive field is
	// asked through elicitd's page, in URL mode (see NeedsPage).
	Sensitive bool `json:"sensitive,omitempty"`
	// Case is applied to text-like values, and to select values before they are matched.
	Case Case `json:"case,omitempty"`

	// Form-level rules (see Condition and Comparison). When: the field is asked only once the answer to
	// an earlier field matches, in a follow-up round; otherwise it is left out of the data.
	// RequiredWhen: the field is asked with the others and required when another answer
	// matches. Compare: the answer is compared with another field's.
	When         *Condition  `json:"when,omitempty"`
	RequiredWhen *Condition  `json:"required_when,omitempty"`
	Compare      *Comparison `json:"compare,omitempty"`

	// Rendering hints, carried to the client in the prompt's _meta (io.elicitd/hints) where
	// the wire schema has no place for them: Placeholder is sample text shown in an empty
	// input; Widget is "multiline" (a text area) or "password", which makes the field
	// sensitive: it is asked through elicitd's page, never in form mode.
	Placeholder string `json:"placeholder,omitempty"`
	Widget      string `json:"widget,omitempty"`

	// Check, Go API only, runs after every field has been normalised and passed its own
	// checks, with the value of this field and all normalised answers (so a postal code can
	// be checked against the country). A non-nil error fails the field; its text follows the
	// label in the message, so write it as "must be ...".
	Check func(value any, answers map[string]any) error `json:"-"`
}

// Option is one choice of a select or multi_select field.
type Option struct {
	Value string `json:"value"`
	Title string `json:"title,omitempty"` // shown instead of Value when set
}

// Ptr returns a pointer to v, for setting a Field's constraints in Go.
func Ptr[T any](v T) *T { return &v }
