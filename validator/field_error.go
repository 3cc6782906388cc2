package validator

import "strings"

// FieldError is one problem with one field of an answer.
//
// Message is written for a person and already names the field by its label, for example
// "Package weight: must be a positive, finite number". It never quotes the value of a field
// marked sensitive.
type FieldError struct {
	Field      string `json:"field"`      // the flat key of the field
	Label      string `json:"label"`      // the field's label as shown to the person
	Constraint string `json:"constraint"` // the rule that failed: "required", "maximum", "format", ...
	Message    string `json:"message"`    // the sentence shown to the person
}

// Error returns the message, so a FieldError can travel as an error.
func (e FieldError) Error() string { return e.Message }

// JoinMessages returns the messages of errs, one a line, in the order given.
func JoinMessages(errs []FieldError) string {
	var b strings.Builder
	for i, fe := range errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fe.Message)
	}
	return b.String()
}
