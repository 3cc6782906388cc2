package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/oauth"
	"github.com/elicitd/elicitd/oauth/oauthtest"
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
	// The names static tokens' callers have, as staticCaller gives them.
	tokens := []string{"first-token-0000000", "second-token-000000"}
	seen := map[string][2]string{}
	for _, tok := range tokens {
		seen[staticCaller(tokens, tok).UserID] = [2]string{"static token", tok}
	}
	for _, p := range pairs {
		name := oauthCaller(&oauth.Claims{Issuer: p[0], Subject: p[1]}).UserID
		if q, dup := seen[name]; dup {
			t.Errorf("%q and %q are both %s", p, q, name)
		}
		seen[name] = p
	}
	assert.Equal(t, "token-2", staticCaller(tokens, "second-token-000000").UserID)
	assert.Nil(t, staticCaller([]string{"first-token-0000000"}, "first-token-000000"))
}

// bearerAuth in process: the challenges of malformed requests, and the caller handed on to
// the MCP handler through go-sdk's middleware.
func TestBearerAuthInProcess(t *testing.T) {
	p := oauthtest.Start(t)
	const resource = "https://elicitd.example.com/mcp"
	hc := httpConfig{addr: "127.0.0.1:0", publicURL: resource, issuers: []string{p.Issuer}, scopes: []string{"elicitd"},
		tokens: []string{"static-token-for-a-machine-01"}}
	require.NoError(t, hc.checkOAuth())
	var seen *auth.TokenInfo
	h := bearerAuth(hc, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = auth.TokenInfoFromContext(r.Context())
	}))
	serve := func(target, authorization string) (int, string) {
		seen = nil
		r := httptest.NewRequest(http.MethodPost, target, nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Header().Get("WWW-Authenticate")
	}
	metadata := `Bearer resource_metadata="https://elicitd.example.com/.well-known/oauth-protected-resource/mcp"`
	good := p.Token(oauthtest.Claims{Subject: "alice", Audience: []string{resource}, Scope: "elicitd"})
	for _, c := range []struct{ name, target, authorization, err string }{
		{"Basic", "/mcp", "Basic dXNlcjpwYXNz", "invalid_request"},
		{"Bearer and nothing", "/mcp", "Bearer ", "invalid_request"},
		{"no token", "/mcp", "", ""},
		{"the query string", "/mcp?access_token=" + good, "", "invalid_request"},
	} {
		code, www := serve(c.target, c.authorization)
		assert.Equal(t, http.StatusUnauthorized, code, c.name)
		assert.True(t, strings.HasPrefix(www, metadata), "%s: %s", c.name, www)
		if c.err != "" {
			assert.Contains(t, www, `error="`+c.err+`"`, c.name)
		} else {
			assert.NotContains(t, www, "error=", c.name)
		}
		assert.Nil(t, seen, "%s: not let through", c.name)
	}

	code, _ := serve("/mcp", "bearer "+good)
	require.Equal(t, http.StatusOK, code, "the scheme is case-insensitive")
	require.NotNil(t, seen)
	assert.Equal(t, `oauth:["`+p.Issuer+`","alice"]`, seen.UserID)
	assert.Equal(t, []string{"elicitd"}, seen.Scopes)
	code, _ = serve("/mcp", "Bearer static-token-for-a-machine-01")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "token-1", seen.UserID)
}
