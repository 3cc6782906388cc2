package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/oauth"
	"github.com/elicitd/elicitd/oauth/oauthtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const resource = "https://elicitd.example.com/mcp"

func newVerifier(t *testing.T, p *oauthtest.Provider, mock *clock.Mock, creds ...string) *oauth.Verifier {
	t.Helper()
	cfg := oauth.Config{Resource: resource, Issuers: []string{p.Issuer}, HTTPClient: &http.Client{}}
	if mock != nil {
		cfg.Clock = mock
	}
	if len(creds) == 2 {
		cfg.ClientID, cfg.ClientSecret = creds[0], creds[1]
	}
	v, err := oauth.New(cfg)
	require.NoError(t, err)
	return v
}

// signIn runs the code flow with PKCE for subject, asking for the resource, and returns the
// access token.
func signIn(t *testing.T, p *oauthtest.Provider, subject string, opts oauthtest.ClientOptions) string {
	t.Helper()
	tok, err := p.SignIn(context.Background(), opts, subject, resource, "openid", "elicitd")
	require.NoError(t, err)
	return tok.AccessToken
}

func TestVerifyAcceptsATokenFromTheCodeFlow(t *testing.T) {
	p := oauthtest.Start(t)
	v := newVerifier(t, p, nil)
	c, err := v.Verify(context.Background(), signIn(t, p, "alice", oauthtest.ClientOptions{}))
	require.NoError(t, err)
	assert.Equal(t, p.Issuer, c.Issuer)
	assert.Equal(t, "alice", c.Subject)
	assert.Equal(t, []string{"openid", "elicitd"}, c.Scopes)
	assert.Empty(t, c.Missing([]string{"elicitd"}))
	assert.Equal(t, []string{"elicitd:admin"}, c.Missing([]string{"elicitd", "elicitd:admin"}))
}

func TestVerifyRefuses(t *testing.T) {
	p := oauthtest.Start(t)
	v := newVerifier(t, p, nil)
	now := time.Now()
	good := oauthtest.Claims{Subject: "mallory", Audience: []string{resource}, Scope: "elicitd"}
	with := func(f func(*oauthtest.Claims)) oauthtest.Claims {
		c := good
		f(&c)
		return c
	}
	// The leeway is no refusal: a token a few seconds past exp, or a few before nbf, passes.
	for name, tok := range map[string]string{
		"valid":                    p.Token(good),
		"exp within leeway":        p.Token(with(func(c *oauthtest.Claims) { c.Expiry = now.Add(-10 * time.Second) })),
		"nbf within leeway":        p.Token(with(func(c *oauthtest.Claims) { c.NotBefore = now.Add(10 * time.Second) })),
		"one of several audiences": p.Token(with(func(c *oauthtest.Claims) { c.Audience = []string{"other", resource} })),
	} {
		_, err := v.Verify(context.Background(), tok)
		assert.NoError(t, err, name)
	}
	// One character of the payload changed (in "aud", its first claim: never an x), the
	// header left whole, so that the kid is found and the signature is what fails.
	tampered := p.Token(good)
	at := strings.Index(tampered, ".") + 5
	tampered = tampered[:at] + "x" + tampered[at+1:]
	for _, c := range []struct{ name, token, says string }{
		{"expired", p.Token(with(func(c *oauthtest.Claims) {
			c.IssuedAt, c.NotBefore, c.Expiry = now.Add(-time.Hour), now.Add(-time.Hour), now.Add(-time.Minute)
		})), "expired"},
		{"not yet valid", p.Token(with(func(c *oauthtest.Claims) { c.NotBefore = now.Add(5 * time.Minute) })), "not valid yet"},
		{"issued in the future", p.Token(with(func(c *oauthtest.Claims) { c.IssuedAt = now.Add(5 * time.Minute) })), "not valid yet"},
		{"another audience", p.Token(with(func(c *oauthtest.Claims) { c.Audience = []string{"https://other.example.com/mcp"} })), "audience"},
		{"no audience", p.Token(with(func(c *oauthtest.Claims) { c.Audience = nil })), "audience"},
		{"another issuer", p.Token(with(func(c *oauthtest.Claims) { c.Issuer = "https://evil.example.com" })), "not one elicitd trusts"},
		{"no subject", p.Token(with(func(c *oauthtest.Claims) { c.Subject = "" })), "no sub"},
		{"alg none", p.TokenAlgNone(good), "allowed algorithm"},
		{"HS256 with the public key", p.TokenHS256WithPublicKey(good), "allowed algorithm"},
		{"unknown kid", p.TokenUnknownKID(good), "no key"},
		{"a key not in the JWKS", p.TokenForeignKey(good), "signature does not verify"},
		{"not a token", "not-a-token", "introspect"},
		{"a tampered payload", tampered, "signature does not verify"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), c.token)
			require.ErrorIs(t, err, oauth.ErrInvalidToken)
			assert.Contains(t, err.Error(), c.says)
			assert.NotContains(t, err.Error(), c.token, "an error never holds the token")
		})
	}
}

func TestKeysAreFetchedAgainForAnUnknownKidAtMostEveryFewSeconds(t *testing.T) {
	p, mock, v, c := verifiedOnce(t)
	ctx := context.Background()
	var err error
	require.EqualValues(t, 1, p.KeyRequests())

	_, err = p.RotateKey()
	require.NoError(t, err)
	rotated := p.Token(c)
	_, err = v.Verify(ctx, rotated)
	require.ErrorIs(t, err, oauth.ErrInvalidToken, "the new kid, within the refresh interval: not fetched yet")
	unknown := p.TokenUnknownKID(c)
	for range 10 {
		_, _ = v.Verify(ctx, unknown)
	}
	assert.EqualValues(t, 1, p.KeyRequests(), "unknown kids do not hammer the issuer")

	mock.Add(oauth.DefaultRefreshEvery)
	_, err = v.Verify(ctx, rotated)
	require.NoError(t, err, "after the interval, the unknown kid fetches the keys again")
	assert.EqualValues(t, 2, p.KeyRequests())
}

func TestKeysAreKeptWhileTheIssuerIsDown(t *testing.T) {
	p, mock, v, c := verifiedOnce(t)
	ctx := context.Background()
	var err error

	p.KeysDown(true)
	mock.Add(time.Minute)
	_, err = v.Verify(ctx, p.TokenUnknownKID(c))
	require.ErrorIs(t, err, oauth.ErrInvalidToken, "an unknown kid while the JWKS is down")
	assert.EqualValues(t, 2, p.KeyRequests(), "it was asked again, and failed")
	_, err = v.Verify(ctx, p.Token(c))
	assert.NoError(t, err, "the keys held still verify")
}

func TestNoKeysAtAllIsUnavailable(t *testing.T) {
	p := oauthtest.Start(t)
	p.KeysDown(true)
	v := newVerifier(t, p, nil)
	_, err := v.Verify(context.Background(), p.Token(oauthtest.Claims{Subject: "alice", Audience: []string{resource}}))
	require.ErrorIs(t, err, oauth.ErrUnavailable)
	assert.NotErrorIs(t, err, oauth.ErrInvalidToken)
}

// keylessIssuer serves, at the server's own URL, an issuer's metadata and a JWKS that holds
// no key the verifier may use (an HMAC secret only); keyRequests counts the JWKS's requests.
func keylessIssuer(t *testing.T) (issuer string, keyRequests *atomic.Int64) {
	t.Helper()
	keyRequests = new(atomic.Int64)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/certs"})
	})
	mux.HandleFunc("GET /certs", func(w http.ResponseWriter, _ *http.Request) {
		keyRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"keys": [{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQ"}]}`)
	})
	return srv.URL, keyRequests
}

// An issuer whose JWKS answers but holds no usable key refuses an unknown kid as an
// invalid token, asked again within the refresh interval too: its keys were fetched, so
// the issuer is not unavailable (a 503 would have the client retry a token that cannot pass).
func TestAnIssuerWithNoUsableKeyRefusesTheTokenEveryTime(t *testing.T) {
	p := oauthtest.Start(t)
	issuer, keyRequests := keylessIssuer(t)
	mock := clock.NewMock()
	mock.Set(time.Now())
	v, err := oauth.New(oauth.Config{Resource: resource, Issuers: []string{issuer}, HTTPClient: &http.Client{}, Clock: mock})
	require.NoError(t, err)
	tok := p.TokenUnknownKID(oauthtest.Claims{Issuer: issuer, Subject: "alice", Audience: []string{resource}})

	_, first := v.Verify(context.Background(), tok)
	require.ErrorIs(t, first, oauth.ErrInvalidToken)
	_, again := v.Verify(context.Background(), tok)
	require.ErrorIs(t, again, oauth.ErrInvalidToken, "asked again within the refresh interval")
	assert.NotErrorIs(t, again, oauth.ErrUnavailable)
	assert.Equal(t, first.Error(), again.Error())
	assert.EqualValues(t, 1, keyRequests.Load(), "the JWKS was asked once")
}

func TestOpaqueTokensAreIntrospected(t *testing.T) {
	p := oauthtest.Start(t)
	rsID, rsSecret := p.RegisterClient(oauthtest.ClientOptions{Confidential: true})
	token := signIn(t, p, "bob", oauthtest.ClientOptions{Opaque: true})

	c, err := newVerifier(t, p, nil, rsID, rsSecret).Verify(context.Background(), token)
	require.NoError(t, err)
	assert.Equal(t, "bob", c.Subject)
	assert.Equal(t, p.Issuer, c.Issuer)
	assert.Contains(t, c.Scopes, "elicitd")

	_, err = newVerifier(t, p, nil).Verify(context.Background(), token)
	require.ErrorIs(t, err, oauth.ErrInvalidToken, "without client credentials, no introspection")
	_, err = newVerifier(t, p, nil, rsID, rsSecret).Verify(context.Background(), "opaque-but-unknown")
	require.ErrorIs(t, err, oauth.ErrInvalidToken)
	assert.Contains(t, err.Error(), "not active")
}

func TestIntrospectionAnswersAreKeptForAWhile(t *testing.T) {
	p := oauthtest.Start(t)
	rsID, rsSecret := p.RegisterClient(oauthtest.ClientOptions{Confidential: true})
	token := signIn(t, p, "bob", oauthtest.ClientOptions{Opaque: true})
	mock := clock.NewMock()
	mock.Set(time.Now())
	v := newVerifier(t, p, mock, rsID, rsSecret)
	ctx := context.Background()
	for range 3 {
		c, err := v.Verify(ctx, token)
		require.NoError(t, err)
		assert.Equal(t, "bob", c.Subject)
	}
	assert.EqualValues(t, 1, p.IntrospectionRequests(), "asked once")
	mock.Add(oauth.IntrospectionCacheFor)
	_, err := v.Verify(ctx, token)
	require.NoError(t, err)
	assert.EqualValues(t, 2, p.IntrospectionRequests(), "asked again once the answer is old")
	for range 2 {
		_, err = v.Verify(ctx, "never-issued")
		require.ErrorIs(t, err, oauth.ErrInvalidToken)
	}
	assert.EqualValues(t, 4, p.IntrospectionRequests(), "a refusal is not kept")
}

// An issuer down at the first request is asked again once the refresh interval has passed,
// for its metadata (opaque tokens) as for its keys (JWTs).
func TestAnIssuerDownAtFirstIsAskedAgainLater(t *testing.T) {
	p := oauthtest.Start(t)
	rsID, rsSecret := p.RegisterClient(oauthtest.ClientOptions{Confidential: true})
	opaque := signIn(t, p, "bob", oauthtest.ClientOptions{Opaque: true})
	jwt := p.Token(oauthtest.Claims{Subject: "alice", Audience: []string{resource}})
	mock := clock.NewMock()
	mock.Set(time.Now())
	v := newVerifier(t, p, mock, rsID, rsSecret)
	ctx := context.Background()

	p.MetadataDown(true)
	_, err := v.Verify(ctx, opaque)
	require.ErrorIs(t, err, oauth.ErrUnavailable)
	_, err = v.Verify(ctx, jwt)
	require.ErrorIs(t, err, oauth.ErrUnavailable)
	p.MetadataDown(false)
	_, err = v.Verify(ctx, opaque)
	require.ErrorIs(t, err, oauth.ErrUnavailable, "within the interval, not asked again")

	mock.Add(oauth.DefaultRefreshEvery)
	c, err := v.Verify(ctx, opaque)
	require.NoError(t, err)
	assert.Equal(t, "bob", c.Subject)
	c, err = v.Verify(ctx, jwt)
	require.NoError(t, err)
	assert.Equal(t, "alice", c.Subject)
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, c := range []oauth.Config{
		{Resource: "http://elicitd.example.com/mcp", Issuers: []string{"https://id.example.com"}},
		{Resource: resource, Issuers: []string{"http://id.example.com"}},
		{Resource: resource},
		{Resource: "mcp", Issuers: []string{"https://id.example.com"}},
	} {
		_, err := oauth.New(c)
		assert.Error(t, err, "%+v", c)
	}
	_, err := oauth.New(oauth.Config{Resource: "http://127.0.0.1:8080/mcp", Issuers: []string{"http://localhost:9000/realms/x"}})
	assert.NoError(t, err, "http on loopback, for development")
}

func TestMetadataPathAndChallenge(t *testing.T) {
	assert.Equal(t, "/.well-known/oauth-protected-resource/mcp", oauth.MetadataPath("https://elicitd.example.com/mcp"))
	assert.Equal(t, "/.well-known/oauth-protected-resource", oauth.MetadataPath("https://elicitd.example.com/"))
	assert.Equal(t, "https://elicitd.example.com/.well-known/oauth-protected-resource/a/mcp", oauth.MetadataURL("https://elicitd.example.com/a/mcp"))
	assert.Equal(t, `Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="it's 'bad'?", scope="a b"`,
		oauth.Challenge{ResourceMetadata: "https://h/.well-known/oauth-protected-resource/mcp", Error: oauth.ErrorInvalidToken,
			Description: `it's "bad"` + "\u00e9", Scope: "a b"}.String())
	assert.Equal(t, "Bearer", oauth.Challenge{}.String())
}

// verifiedOnce is a provider and a verifier on a mock clock that has verified one of alice's
// tokens (claims c), so that it holds the provider's keys.
func verifiedOnce(t *testing.T) (*oauthtest.Provider, *clock.Mock, *oauth.Verifier, oauthtest.Claims) {
	t.Helper()
	p := oauthtest.Start(t)
	mock := clock.NewMock()
	mock.Set(time.Now())
	v := newVerifier(t, p, mock)
	c := oauthtest.Claims{Subject: "alice", Audience: []string{resource}}
	_, err := v.Verify(context.Background(), p.Token(c))
	require.NoError(t, err)
	return p, mock, v, c
}
