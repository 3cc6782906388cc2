package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/elicitd/elicitd/oauth"
)

// An OAuth caller is named by its issuer and subject, so that no two pairs, however their
// characters are chosen, and no static token's caller share a name.
func TestOAuthCallersNeverShareAName(t *testing.T) {
	pairs := [][2]string{
		{"https://a.example.com", "alice"},
		{"https://b.example.com", "alice"},
		{"https://a.example.com", "bob"},
		{`https://a.example.com","alice`, ""},
		{"https://a.example.com", `","alice`},
		{"https://a.example.com/", "alice"},
		{"token-1", ""},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		name := oauthCaller(&oauth.Claims{Issuer: p[0], Subject: p[1]}).UserID
		assert.True(t, strings.HasPrefix(name, "oauth:"), name)
		if q, dup := seen[name]; dup {
			t.Errorf("%q and %q are both %s", p, q, name)
		}
		seen[name] = p
	}
	assert.Equal(t, "token-2", staticCaller([]string{"first-token-0000000", "second-token-000000"}, "second-token-000000").UserID)
	assert.Nil(t, staticCaller([]string{"first-token-0000000"}, "first-token-000000"))
}
