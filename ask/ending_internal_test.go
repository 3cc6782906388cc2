package ask

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/validator"
)

// Only the form's own fields not asked on the page leave: never a secret, a password or a
// file, nor an answer the form does not name (a follow-up's).
func TestLeavingKeepsOnlyWhatMayLeave(t *testing.T) {
	form, err := validator.Compile(validator.Form{Fields: []validator.Field{
		{Name: "name", Type: validator.Text, Required: true},
		{Name: "api_key", Type: validator.Text, Sensitive: true},
		{Name: "pin", Type: validator.Text, Widget: "password"},
		{Name: "scan", Type: validator.File},
	}})
	require.NoError(t, err)
	answers, sensitive := leaving(form, map[string]any{"name": "Ada", "api_key": "sk-1", "pin": "1234",
		"scan": map[string]any{"base64": "AAAA"}, "followup": "x"})
	assert.Equal(t, map[string]any{"name": "Ada"}, answers)
	assert.Equal(t, []string{"api_key", "pin", "scan"}, sensitive)

	answers, sensitive = leaving(nil, map[string]any{"name": "Ada"})
	assert.Nil(t, answers, "no form, nothing is known to be safe")
	assert.Nil(t, sensitive)
}
