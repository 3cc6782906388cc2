package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/oauth/oauthtest"
)

// startOAuth starts elicitd --http on a loopback port whose URL is its --public-url,
// trusting p's tokens and asking for the scope elicitd, with args and env added.
func startOAuth(t *testing.T, p *oauthtest.Provider, args []string, env ...string) *httpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // the port is elicitd's now: its public URL must be known before it starts
	base := []string{"--http", addr, "--public-url", "http://" + addr + "/mcp", "--auth-issuer", p.Issuer,
		"--auth-scope", "elicitd", "--pull-idle", "1m", "--rate", "0"}
	s := startHTTPWith(t, append(base, args...), env...)
	require.Equal(t, "http://"+addr+"/mcp", s.url)
	return s
}

// signedIn is a go-sdk client session that signed in to p as a person.
type signedIn struct {
	*mcp.ClientSession
	handler *auth.AuthorizationCodeHandler
}

// signIn connects a go-sdk client speaking version ("": 2026-07-28) to s with go-sdk's
// AuthorizationCodeHandler: from the first 401 it discovers p, registers itself
// dynamically, and runs the code flow with PKCE, signing in as subject. With byHand the
// client leaves input requests to the test (pull era).
func signIn(t *testing.T, p *oauthtest.Provider, s *httpServer, subject, version string, byHand bool,
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *signedIn {
	t.Helper()
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{"http://127.0.0.1:1/callback"}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, ClientName: "e2e-oauth",
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			q, err := p.Login(ctx, a.URL, subject)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
		RequestRefreshToken: true,
	})
	require.NoError(t, err)
	opts := &mcp.ClientOptions{ElicitationHandler: elicit}
	if byHand {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("answered by the test")
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-oauth", Version: "1"}, opts)
	cs, err := client.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: s.url, OAuthHandler: h, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "%s signs in", subject)
	t.Cleanup(func() { _ = cs.Close() })
	return &signedIn{cs, h}
}

// accessToken is the token the session signed in with.
func (c *signedIn) accessToken(t *testing.T) string {
	t.Helper()
	ts, err := c.handler.TokenSource(context.Background())
	require.NoError(t, err)
	require.NotNil(t, ts, "signed in")
	tok, err := ts.Token()
	require.NoError(t, err)
	return tok.AccessToken
}

// From the first 401 to a completed ask_user, in both eras, with go-sdk's client: discovery
// of the protected resource and the authorization server, registration, PKCE, the code,
// and the token on every request.
func TestOAuthSignInThenAsk(t *testing.T) {
	p := oauthtest.Start(t)
	s := startOAuth(t, p, nil)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			cs := signIn(t, p, s, "alice", era.version, false, accept(map[string]any{"name": "Ada"}))
			out, isErr := callTool(t, cs.ClientSession, "ask_user", map[string]any{"message": "Who?", "form": nameForm})
			require.False(t, isErr, "%v", out)
			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"name": "Ada"}, out["data"])
			assert.NotContains(t, s.stderr.String(), cs.accessToken(t), "a token is never logged")
		})
	}
}

// probe POSTs an initialize to url with token in the Authorization header (none when ""), and
// returns the status and the WWW-Authenticate challenge.
func probe(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, res.Header.Get("WWW-Authenticate")
}

func TestOAuthRefusesBadTokens(t *testing.T) {
	p := oauthtest.Start(t)
	other := oauthtest.Start(t) // a real provider elicitd does not trust
	const static = "static-token-for-a-machine-01"
	rsID, rsSecret := p.RegisterClient(oauthtest.ClientOptions{Confidential: true}) // elicitd, to introspect
	// At debug level, where refusals are logged with their reasons: still never a token.
	s := startOAuth(t, p, []string{"--log-level", "debug"}, "ELICITD_HTTP_TOKEN="+static, "ELICITD_AUTH_CLIENT_ID="+rsID, "ELICITD_AUTH_CLIENT_SECRET="+rsSecret)
	resource := s.url
	opaque := func(scopes ...string) string {
		tok, err := p.SignIn(context.Background(), oauthtest.ClientOptions{Opaque: true}, "olga", resource, scopes...)
		require.NoError(t, err)
		return tok.AccessToken
	}
	metadata := strings.TrimSuffix(s.url, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
	challenge := `Bearer resource_metadata="` + metadata + `"`

	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	res, err := http.Get(metadata)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&prm))
	_ = res.Body.Close()
	assert.Equal(t, resource, prm.Resource)
	assert.Equal(t, []string{p.Issuer}, prm.AuthorizationServers)
	assert.Equal(t, []string{"elicitd"}, prm.ScopesSupported)

	now := time.Now()
	good := oauthtest.Claims{Subject: "mallory", Audience: []string{resource}, Scope: "elicitd"}
	with := func(f func(*oauthtest.Claims)) oauthtest.Claims {
		c := good
		f(&c)
		return c
	}
	cases := []struct {
		name, token string
		status      int
		error       string // the challenge's error parameter; "" for none
	}{
		{"a valid token", p.Token(good), http.StatusOK, ""},
		{"a static token", static, http.StatusOK, ""},
		{"no token", "", http.StatusUnauthorized, ""},
		{"expired", p.Token(with(func(c *oauthtest.Claims) {
			c.IssuedAt, c.NotBefore, c.Expiry = now.Add(-time.Hour), now.Add(-time.Hour), now.Add(-time.Minute)
		})), http.StatusUnauthorized, "invalid_token"},
		{"not yet valid", p.Token(with(func(c *oauthtest.Claims) { c.NotBefore = now.Add(5 * time.Minute) })), http.StatusUnauthorized, "invalid_token"},
		{"another audience", p.Token(with(func(c *oauthtest.Claims) { c.Audience = []string{"https://other.example.com/mcp"} })), http.StatusUnauthorized, "invalid_token"},
		{"another issuer", other.Token(good), http.StatusUnauthorized, "invalid_token"},
		{"another issuer's name on our key", p.Token(with(func(c *oauthtest.Claims) { c.Issuer = other.Issuer })), http.StatusUnauthorized, "invalid_token"},
		{"alg none", p.TokenAlgNone(good), http.StatusUnauthorized, "invalid_token"},
		{"HS256 signed with the public key", p.TokenHS256WithPublicKey(good), http.StatusUnauthorized, "invalid_token"},
		{"an unknown kid", p.TokenUnknownKID(good), http.StatusUnauthorized, "invalid_token"},
		{"a valid signature from a key not in the JWKS", p.TokenForeignKey(good), http.StatusUnauthorized, "invalid_token"},
		{"a wrong static token", "static-token-for-a-machine-02", http.StatusUnauthorized, "invalid_token"},
		{"a missing scope", p.Token(with(func(c *oauthtest.Claims) { c.Scope = "openid" })), http.StatusForbidden, "insufficient_scope"},
		{"an opaque token, introspected", opaque("openid", "elicitd"), http.StatusOK, ""},
		{"an opaque token without the scope", opaque("openid"), http.StatusForbidden, "insufficient_scope"},
		{"an opaque token the issuer never issued", "opaque-token-never-issued", http.StatusUnauthorized, "invalid_token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, www := probe(t, s.url, c.token)
			assert.Equal(t, c.status, status)
			if c.status == http.StatusOK {
				assert.Empty(t, www)
				return
			}
			assert.True(t, strings.HasPrefix(www, challenge), "%s", www)
			assert.Contains(t, www, `scope="elicitd"`)
			if c.error == "" {
				assert.NotContains(t, www, "error=")
			} else {
				assert.Contains(t, www, `error="`+c.error+`"`)
			}
		})
	}

	inQuery := p.Token(good)
	t.Run("the token in the query string", func(t *testing.T) {
		status, www := probe(t, s.url+"?access_token="+inQuery, "")
		assert.Equal(t, http.StatusUnauthorized, status)
		assert.Contains(t, www, `error="invalid_request"`)
		status, _ = probe(t, s.url+"?access_token="+inQuery, inQuery)
		assert.Equal(t, http.StatusUnauthorized, status, "even beside a good header")
	})

	t.Run("the JWKS endpoint down: the keys held are kept", func(t *testing.T) {
		p.KeysDown(true)
		defer p.KeysDown(false)
		before := p.KeyRequests()
		status, _ := probe(t, s.url, p.Token(good))
		assert.Equal(t, http.StatusOK, status, "a known key still verifies")
		status, www := probe(t, s.url, p.TokenUnknownKID(good))
		assert.Equal(t, http.StatusUnauthorized, status)
		assert.Contains(t, www, `error="invalid_token"`)
		assert.LessOrEqual(t, p.KeyRequests()-before, int64(1), "at most one fetch of the keys within the refresh interval")
	})

	logs := s.stderr.String()
	require.Contains(t, logs, "an OAuth token was refused", "refusals were logged")
	for _, c := range cases {
		if c.token != "" {
			assert.NotContains(t, logs, c.token, "%s: a token is never logged", c.name)
		}
	}
	assert.NotContains(t, logs, inQuery, "nor one sent in the URL")
	assert.NotContains(t, logs, rsSecret, "nor the introspection secret")
}

// An issuer that cannot be reached before any of its keys is held: 503, not a 401 the
// client would take for a bad token.
func TestOAuthIssuerUnreachableAtFirst(t *testing.T) {
	p := oauthtest.Start(t)
	p.KeysDown(true)
	s := startOAuth(t, p, nil)
	status, www := probe(t, s.url, p.Token(oauthtest.Claims{Subject: "alice", Audience: []string{s.url}, Scope: "elicitd"}))
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Empty(t, www)
	p.KeysDown(false)
}

// Two people, through one node and across two nodes sharing a store: neither lists,
// cancels, extends nor answers the other's questions; the same person sees theirs on both
// nodes. A static token's caller is a third party.
func TestOAuthPeopleAreIsolated(t *testing.T) {
	p := oauthtest.Start(t)
	ns := natsServer(t, &natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	const static = "static-token-for-a-machine-01"
	a := startOAuth(t, p, []string{"--store", ns.ClientURL()}, "ELICITD_HTTP_TOKEN="+static)
	b := startOAuth(t, p, []string{"--store", ns.ClientURL()}, "ELICITD_HTTP_TOKEN="+static)

	aliceOnA := signIn(t, p, a, "alice", "", true, nil)
	first, err := aliceOnA.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
	require.NoError(t, err)
	require.True(t, first.NeedsInput(), "alice's question is open")
	mine, _ := callTool(t, aliceOnA.ClientSession, "list_elicitations", map[string]any{})
	require.Len(t, mine["elicitations"], 1, "%v", mine)
	id := listedID(mine)

	aliceOnB := signIn(t, p, b, "alice", "", true, nil)
	onB, _ := callTool(t, aliceOnB.ClientSession, "list_elicitations", map[string]any{})
	assert.Len(t, onB["elicitations"], 1, "alice sees her question on the other node: %v", onB)

	machine, err := connectHTTP(t, a, "", static, accept(map[string]any{"name": "M"}))
	require.NoError(t, err)
	for name, other := range map[string]*mcp.ClientSession{
		"bob on the same node":  signIn(t, p, a, "bob", "", true, nil).ClientSession,
		"bob on the other node": signIn(t, p, b, "bob", "", true, nil).ClientSession,
		"a static token":        machine,
	} {
		t.Run(name, func(t *testing.T) {
			theirs, _ := callTool(t, other, "list_elicitations", map[string]any{})
			assert.Empty(t, theirs["elicitations"], "sees nothing of alice's")
			out, isErr := callTool(t, other, "cancel_elicitation", map[string]any{"id": id})
			assert.True(t, isErr)
			assert.Equal(t, "NOT_FOUND", out["code"], "cannot cancel it")
			out, isErr = callTool(t, other, "extend_elicitation", map[string]any{"id": id, "seconds": 60})
			assert.True(t, isErr)
			assert.Equal(t, "NOT_FOUND", out["code"], "cannot extend it")
			out = structured(t, roundVia(t, other, first.RequestState, 1, map[string]any{"name": "Eve", "age": 30}))
			assert.Equal(t, "INVALID_REQUEST_STATE", out["code"], "cannot answer it with her requestState: %v", out)
			assert.Equal(t, "foreign", out["reason"], "%v", out)
		})
	}
	mine, _ = callTool(t, aliceOnB.ClientSession, "list_elicitations", map[string]any{})
	require.Len(t, mine["elicitations"], 1, "alice's question is still open: %v", mine)
	done := structured(t, roundVia(t, aliceOnB.ClientSession, first.RequestState, 1, map[string]any{"name": "Ada", "age": 36}))
	assert.Equal(t, "completed", done["status"], "alice answers it on the other node: %v", done)

	t.Run("push era, one node", func(t *testing.T) {
		asked := make(chan struct{}, 1)
		release := make(chan struct{})
		alice := signIn(t, p, a, "alice", "2025-11-25", false, neverAnswers(asked, release))
		bob := signIn(t, p, a, "bob", "2025-11-25", false, accept(map[string]any{"name": "B"}))
		done := make(chan error, 1)
		go func() {
			_, err := alice.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
			done <- err
		}()
		<-asked
		mine, _ := callTool(t, alice.ClientSession, "list_elicitations", map[string]any{})
		require.Len(t, mine["elicitations"], 1, "%v", mine)
		id := listedID(mine)
		theirs, _ := callTool(t, bob.ClientSession, "list_elicitations", map[string]any{})
		assert.Empty(t, theirs["elicitations"])
		out, isErr := callTool(t, bob.ClientSession, "cancel_elicitation", map[string]any{"id": id})
		assert.True(t, isErr)
		assert.Equal(t, "NOT_FOUND", out["code"])

		// Bob's token on alice's session: the session is hers.
		req, err := http.NewRequest(http.MethodPost, a.url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_elicitations","arguments":{}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", alice.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+bob.accessToken(t))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.GreaterOrEqual(t, res.StatusCode, 400, "bob may not use alice's session")

		out, isErr = callTool(t, alice.ClientSession, "cancel_elicitation", map[string]any{"id": id})
		require.False(t, isErr, "%v", out)
		close(release)
		require.NoError(t, <-done)
	})
}

// roundVia is round (store_e2e_test.go) through the session cs, whose caller is the one
// answering, rather than a new client without a token.
func roundVia(t *testing.T, cs *mcp.ClientSession, state string, n int, content map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs, RequestState: state,
		InputResponses: mcp.InputResponseMap{fmt.Sprintf("elicit-%d", n): &mcp.ElicitResult{Action: "accept", Content: content}}})
	require.NoError(t, err)
	return res
}

// listedID is the id of the first question a list_elicitations result lists.
func listedID(listed map[string]any) string {
	return listed["elicitations"].([]any)[0].(map[string]any)["id"].(string)
}

func TestOAuthBadSettingsExitTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--http", "127.0.0.1:0", "--public-url", "https://e.example.com/mcp", "--auth-issuer", "http://id.example.com"}, nil, "--auth-issuer must be https://"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com"}, nil, "--auth-issuer needs --public-url"},
		{[]string{"--http", "127.0.0.1:0", "--public-url", "https://e.example.com/mcp"}, nil, "--public-url is the resource OAuth tokens are for: it needs --auth-issuer"},
		{[]string{"--http", "127.0.0.1:0", "--auth-scope", "elicitd"}, nil, "--auth-scope needs --auth-issuer"},
		{[]string{"--auth-issuer", "https://id.example.com", "--public-url", "https://e.example.com/mcp"}, nil, "--auth-issuer needs --http"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com", "--public-url", "https://e.example.com/mcp?x=1"}, nil, "--public-url must be a URL with no query"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com", "--public-url", "http://e.example.com/mcp"}, nil, "--public-url must be https://"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com", "--public-url", "https://e.example.com/{x}"}, nil, "--public-url must be a URL with no query or fragment, its path letters"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com", "--public-url", "https://e.example.com/mcp"}, []string{"ELICITD_AUTH_CLIENT_ID=x"}, "ELICITD_AUTH_CLIENT_ID and ELICITD_AUTH_CLIENT_SECRET go together"},
		{[]string{"--http", "127.0.0.1:0", "--public-url", "https://e.example.com/mcp"}, []string{"ELICITD_AUTH_ISSUER=https://id.example.com,ftp://x"}, "ELICITD_AUTH_ISSUER must be an absolute https:// URL"},
	} {
		out, err := runElicitd(t, c.args, c.env...)
		require.Error(t, err, "%v", c.args)
		assert.Equal(t, 2, exitCode(err), "%v: %s", c.args, out)
		assert.Contains(t, out, c.want, "%v", c.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "%v: one line: %q", c.args, out)
	}
}

// Two trusted issuers (--auth-issuer given twice): both issuers' tokens are let in, and the
// same subject at each is two people.
func TestOAuthTwoIssuersTwoPeople(t *testing.T) {
	p1, p2 := oauthtest.Start(t), oauthtest.Start(t)
	s := startOAuth(t, p1, []string{"--auth-issuer", p2.Issuer})
	token := func(p *oauthtest.Provider) string {
		tok, err := p.SignIn(context.Background(), oauthtest.ClientOptions{}, "alice", s.url, "openid", "elicitd")
		require.NoError(t, err)
		return tok.AccessToken
	}
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	res, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + "/.well-known/oauth-protected-resource/mcp")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(res.Body).Decode(&prm))
	_ = res.Body.Close()
	assert.Equal(t, []string{p1.Issuer, p2.Issuer}, prm.AuthorizationServers)

	at1 := pullByHand(t, s, nil, bearer{token(p1)})
	first, err := at1.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	mine, _ := callTool(t, at1, "list_elicitations", map[string]any{})
	require.Len(t, mine["elicitations"], 1, "%v", mine)
	id := listedID(mine)

	at2 := pullByHand(t, s, nil, bearer{token(p2)})
	theirs, isErr := callTool(t, at2, "list_elicitations", map[string]any{})
	require.False(t, isErr, "the second issuer's token is let in: %v", theirs)
	assert.Empty(t, theirs["elicitations"], "alice at the other issuer is another person")
	out, isErr := callTool(t, at2, "cancel_elicitation", map[string]any{"id": id})
	assert.True(t, isErr)
	assert.Equal(t, "NOT_FOUND", out["code"])
}
