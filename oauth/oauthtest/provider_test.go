package oauthtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"

	"github.com/elicitd/elicitd/oauth/oauthtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const resource = "https://elicitd.example.com/mcp"

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

type discovery struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	IntrospectionEndpoint string   `json:"introspection_endpoint"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
}

// register registers a public client by RFC 7591 and returns its id.
func register(t *testing.T, d discovery, redirect string) string {
	t.Helper()
	body := `{"redirect_uris": ["` + redirect + `"], "token_endpoint_auth_method": "none", "client_name": "test"}`
	resp, err := http.Post(d.RegistrationEndpoint, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Empty(t, out.ClientSecret, "a public client has no secret")
	return out.ClientID
}

// verify checks token's signature against the provider's JWKS and returns its claims.
func verify(t *testing.T, d discovery, token string) map[string]any {
	t.Helper()
	var keys jose.JSONWebKeySet
	getJSON(t, d.JWKSURI, &keys)
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, tok.Claims(&keys, &claims))
	return claims
}

func TestCodeFlowWithPKCEGivesAJWTForTheResource(t *testing.T) {
	p := oauthtest.Start(t)
	var d, d2 discovery
	getJSON(t, p.Issuer+"/.well-known/oauth-authorization-server", &d)
	getJSON(t, p.Issuer+"/.well-known/openid-configuration", &d2)
	assert.Equal(t, d, d2, "both discovery documents say the same")
	assert.Equal(t, p.Issuer, d.Issuer)
	assert.Contains(t, d.CodeChallengeMethods, "S256")
	require.NotEmpty(t, d.RegistrationEndpoint)

	const redirect = "http://127.0.0.1:1/callback"
	cfg := &oauth2.Config{ClientID: register(t, d, redirect), RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: d.AuthorizationEndpoint, TokenURL: d.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
		Scopes:   []string{"openid", "offline_access", "elicitd"}}
	verifier := oauth2.GenerateVerifier()
	ctx := context.Background()
	q, err := p.Login(ctx, cfg.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)), "alice")
	require.NoError(t, err)
	assert.Equal(t, "st4te", q.Get("state"))

	_, err = cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption("not-the-verifier-not-the-verifier-43chars"))
	require.Error(t, err, "PKCE: a wrong verifier is refused")
	q, err = p.Login(ctx, cfg.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)), "alice")
	require.NoError(t, err)
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	require.NoError(t, err)
	_, err = cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	require.Error(t, err, "a code is used once")

	claims := verify(t, d, tok.AccessToken)
	assert.Equal(t, p.Issuer, claims["iss"])
	assert.Equal(t, "alice", claims["sub"])
	assert.Contains(t, claims["aud"], resource)
	assert.Equal(t, "openid offline_access elicitd", claims["scope"])
	require.NotEmpty(t, tok.RefreshToken)

	// Refresh: a new access token, and the old refresh token is spent.
	old := tok.RefreshToken
	tok.Expiry = time.Now().Add(-time.Minute)
	fresh, err := cfg.TokenSource(ctx, tok).Token()
	require.NoError(t, err)
	assert.NotEqual(t, tok.AccessToken, fresh.AccessToken)
	assert.Equal(t, "alice", verify(t, d, fresh.AccessToken)["sub"])
	_, err = cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: old, Expiry: time.Now().Add(-time.Minute)}).Token()
	require.Error(t, err, "a refresh token is rotated")
}

func TestOpaqueTokensAreIntrospected(t *testing.T) {
	p := oauthtest.Start(t)
	var d discovery
	getJSON(t, p.Issuer+"/.well-known/openid-configuration", &d)
	rsID, rsSecret := p.RegisterClient(oauthtest.ClientOptions{Confidential: true})
	tok, err := p.SignIn(context.Background(), oauthtest.ClientOptions{Opaque: true}, "bob", resource, "openid", "elicitd")
	require.NoError(t, err)
	_, err = jwt.ParseSigned(tok.AccessToken, []jose.SignatureAlgorithm{jose.RS256})
	require.Error(t, err, "an opaque token is no JWT")

	introspect := func(token string) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, d.IntrospectionEndpoint, strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(rsID, rsSecret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	got := introspect(tok.AccessToken)
	assert.Equal(t, true, got["active"])
	assert.Equal(t, "bob", got["sub"])
	assert.Equal(t, "openid elicitd", got["scope"])
	assert.Contains(t, got["aud"], resource)
	assert.Equal(t, false, introspect("not-a-token")["active"])
}

func TestMintedTokens(t *testing.T) {
	p := oauthtest.Start(t)
	var d discovery
	getJSON(t, p.Issuer+"/.well-known/openid-configuration", &d)
	c := oauthtest.Claims{Subject: "mallory", Audience: []string{resource}, Scope: "elicitd"}
	claims := verify(t, d, p.Token(c))
	assert.Equal(t, "mallory", claims["sub"])
	assert.Equal(t, p.Issuer, claims["iss"])

	var keys jose.JSONWebKeySet
	getJSON(t, d.JWKSURI, &keys)
	for name, token := range map[string]string{
		"foreign key": p.TokenForeignKey(c), "unknown kid": p.TokenUnknownKID(c),
	} {
		tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
		require.NoError(t, err, name)
		var out map[string]any
		assert.Error(t, tok.Claims(&keys, &out), "%s: no published key verifies it", name)
	}
	for name, token := range map[string]string{"none": p.TokenAlgNone(c), "HS256": p.TokenHS256WithPublicKey(c)} {
		_, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
		assert.Error(t, err, "%s: not an allowed algorithm", name)
	}

	kid, err := p.RotateKey()
	require.NoError(t, err)
	getJSON(t, d.JWKSURI, &keys)
	assert.Len(t, keys.Keys, 2, "the old key stays published beside the new")
	tok, err := jwt.ParseSigned(p.Token(c), []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	assert.Equal(t, kid, tok.Headers[0].KeyID)

	p.KeysDown(true)
	resp, err := http.Get(d.JWKSURI)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.GreaterOrEqual(t, p.KeyRequests(), int64(3))
}

// Browse delivers the authorization response to a client that listens for it itself.
func TestBrowseDeliversTheCodeToTheClient(t *testing.T) {
	p := oauthtest.Start(t)
	got := make(chan url.Values, 1)
	client := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query()
		_, _ = io.WriteString(w, "signed in; you may close this tab")
	}))
	defer client.Close()
	id, _ := p.RegisterClient(oauthtest.ClientOptions{RedirectURIs: []string{client.URL + "/callback"}})
	cfg := &oauth2.Config{ClientID: id, RedirectURL: client.URL + "/callback", Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: p.Issuer + "/authorize", TokenURL: p.Issuer + "/oauth/token"}}
	status, err := p.Browse(context.Background(), cfg.AuthCodeURL("xyz", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "carol")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	q := <-got
	assert.Equal(t, "xyz", q.Get("state"))
	assert.NotEmpty(t, q.Get("code"))

	_, err = p.Browse(context.Background(), strings.Replace(cfg.AuthCodeURL("xyz"), "client_id="+id, "client_id=nobody", 1), "carol")
	assert.Error(t, err, "an unknown client is refused by the provider, with no redirect")
}
