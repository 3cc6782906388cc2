package webhook_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/webhook"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	ok := []struct {
		raw          string
		allowPrivate bool
	}{
		{"https://hooks.example.com/elicitd", false},
		{"https://hooks.example.com:8443/a/b?token=x", false},
		{"https://93.184.215.14/hook", false},
		{"https://10.0.0.5/hook", true},
		{"http://127.0.0.1:8080/hook", true},
		{"http://localhost:8080/hook", true},
		{"http://[::1]:8080/hook", true},
		{"http://hooks.internal/hook", true},
	}
	for _, tc := range ok {
		u, err := webhook.ParseURL(tc.raw, tc.allowPrivate)
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.raw, u.String())
	}
	bad := []struct {
		raw          string
		allowPrivate bool
		says         string
	}{
		{"http://hooks.example.com/hook", false, "plain http is allowed only for private receivers"},
		{"ftp://hooks.example.com/hook", true, `the scheme "ftp" is not allowed`},
		{"hooks.example.com/hook", false, "not an absolute URL"},
		{"https:///hook", false, "no host"},
		{"https://user:pw@hooks.example.com/hook", false, "user name or password"},
		{"https://hooks.example.com/hook#frag", false, "no #fragment"},
		{"https://127.0.0.1/hook", false, "127.0.0.1 is not a public address"},
		{"https://10.0.0.5/hook", false, "10.0.0.5 is not a public address"},
		{"https://[::1]/hook", false, "::1 is not a public address"},
		{"https://169.254.169.254/latest", false, "169.254.169.254 is not a public address"},
		{"https://localhost/hook", false, "localhost is not a public host"},
		{"https://a.localhost/hook", false, "localhost is not a public host"},
		{"https://2130706433/hook", true, "plain dotted form"},
		{"https://0x7f.1/hook", false, "plain dotted form"},
	}
	for _, tc := range bad {
		_, err := webhook.ParseURL(tc.raw, tc.allowPrivate)
		require.Error(t, err, tc.raw)
		var ue *webhook.URLError
		require.True(t, errors.As(err, &ue), "a *webhook.URLError: %v", err)
		assert.ErrorIs(t, err, webhook.ErrInvalidURL)
		assert.Equal(t, tc.raw, ue.Value)
		assert.Contains(t, err.Error(), tc.says, tc.raw)
		assert.Contains(t, err.Error(), `webhook URL "`+tc.raw+`"`, "names the value")
		if tc.allowPrivate {
			assert.Contains(t, err.Error(), "want an https:// or http:// URL")
		} else {
			assert.Contains(t, err.Error(), "want an https:// URL of a public host")
		}
	}
}
