package oauth

import "strings"

// Challenge is a Bearer WWW-Authenticate challenge (RFC 6750 §3), with the resource
// metadata URL of RFC 9728 §5.1. Empty fields are left out.
type Challenge struct {
	ResourceMetadata string // resource_metadata: where the client finds the authorization servers
	Error            string // error: invalid_token, insufficient_scope, invalid_request
	Description      string // error_description: for a person
	Scope            string // scope: space-separated, the scopes needed
}

// Error codes of RFC 6750 §3.1.
const (
	ErrorInvalidRequest    = "invalid_request"
	ErrorInvalidToken      = "invalid_token"
	ErrorInsufficientScope = "insufficient_scope"
)

// String is the header's value.
func (c Challenge) String() string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	for _, p := range [][2]string{
		{"resource_metadata", c.ResourceMetadata}, {"error", c.Error},
		{"error_description", c.Description}, {"scope", c.Scope},
	} {
		if p[1] == "" {
			continue
		}
		b.WriteString(sep + p[0] + "=" + quote(p[1]))
		sep = ", "
	}
	return b.String()
}

// quote is an HTTP quoted-string of s in the characters RFC 6750 §3 allows in
// error_description: printable ASCII without '"' (written ') and '\' (written /); anything
// else is a '?'.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteByte('\'')
		case r == '\\':
			b.WriteByte('/')
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	b.WriteByte('"')
	return b.String()
}
