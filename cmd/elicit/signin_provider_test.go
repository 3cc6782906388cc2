package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/oauth"
	"github.com/elicitd/elicitd/oauth/oauthtest"
)

// resourceServer is an MCP server that wants a sign-in with an oauthtest provider, made of
// go-sdk's own parts: auth.RequireBearerToken in front of a Streamable HTTP handler, its
// RFC 9728 metadata from auth.ProtectedResourceMetadataHandler, and the provider's access
// tokens checked by the project's own verifier (package oauth: signature against the
// provider's JWKS, issuer, audience). Its one tool, whoami, answers with the subject the
// token names.
type resourceServer struct {
	url string // the MCP endpoint
}

func startResourceServer(t *testing.T, p *oauthtest.Provider) *resourceServer {
	t.Helper()
	rs := &resourceServer{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	rs.url = srv.URL + "/mcp"
	metadataURL := oauth.MetadataURL(rs.url)
	mux.Handle(oauth.MetadataPath(rs.url), auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: rs.url, AuthorizationServers: []string{p.Issuer}, ScopesSupported: []string{"elicitd"},
	}))
	verifier, err := oauth.New(oauth.Config{Resource: rs.url, Issuers: []string{p.Issuer}})
	require.NoError(t, err)
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		claims, err := verifier.Verify(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{Scopes: claims.Scopes, Expiration: claims.Expiry, UserID: claims.Subject}, nil
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "resource", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL, Scopes: []string{"elicitd"}})(handler))
	return rs
}

// providerBrowser plays the person's browser against p: it signs in as subject on the
// provider's login step (which approves at once) and brings the authorization response
// back to elicit's loopback redirect, as a browser following the provider's redirect would.
type providerBrowser struct {
	p       *oauthtest.Provider
	subject string
	opened  atomic.Int64
}

func (b *providerBrowser) open(link string) error {
	b.opened.Add(1)
	status, err := b.p.Browse(context.Background(), link, b.subject)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("the loopback redirect answered %d %s", status, http.StatusText(status))
	}
	return nil
}

// whoami connects to rs through sign-in s and returns the subject the server sees.
func whoami(t *testing.T, rs *resourceServer, s *signIn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cl := mcp.NewClient(&mcp.Implementation{Name: "elicit-test", Version: version}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.url, OAuthHandler: s}, nil)
	require.NoError(t, err, "stderr: %v", s.stderr)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	require.NoError(t, err)
	require.False(t, res.IsError)
	return res.Content[0].(*mcp.TextContent).Text
}

// elicit signs in with a real provider: dynamic registration, PKCE, the browser step, the
// code exchanged for tokens kept in a private file; the next run reuses them without a
// browser, refreshes the access token once it has expired (by its recorded expiry), and
// after logout signs in again.
func TestSignInWithAProvider(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)
	store := &signIns{dir: t.TempDir()}
	browser := &providerBrowser{p: p, subject: "alice"}
	var stderr syncBuffer
	run := func() string {
		s := newSignIn(rs.url, store, &stderr)
		s.browse = browser.open
		return whoami(t, rs, s)
	}

	assert.Equal(t, "alice", run())
	assert.EqualValues(t, 1, browser.opened.Load(), "one browser step")
	assert.Contains(t, stderr.String(), rs.url+" wants you to sign in.")
	assert.Contains(t, stderr.String(), "elicit: signed in to "+rs.url)
	kept, err := store.load(rs.url)
	require.NoError(t, err)
	require.NotNil(t, kept)
	assert.NotEmpty(t, kept.Token.RefreshToken, "offline_access was asked for, and granted")
	assert.Contains(t, kept.Scopes, "elicitd", "the scope the server's metadata names")
	assert.Equal(t, p.Issuer+"/oauth/token", kept.TokenURL)
	info, err := os.Stat(store.path(rs.url))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	assert.Equal(t, "alice", run(), "the kept sign-in")
	assert.EqualValues(t, 1, browser.opened.Load(), "no browser the second time")

	// The access token expires: the kept record says so, and the next run refreshes it.
	kept.Token.Expiry = time.Now().Add(-time.Minute)
	require.NoError(t, store.save(kept))
	assert.Equal(t, "alice", run())
	assert.EqualValues(t, 1, browser.opened.Load(), "a refresh needs no browser")
	refreshed, err := store.load(rs.url)
	require.NoError(t, err)
	assert.NotEqual(t, kept.Token.AccessToken, refreshed.Token.AccessToken, "a new access token, kept")
	assert.NotEqual(t, kept.Token.RefreshToken, refreshed.Token.RefreshToken, "the provider rotates refresh tokens; the new one is kept")
	assert.True(t, refreshed.Token.Expiry.After(time.Now()))

	// The refresh token is refused (it was rotated away): elicit signs in again.
	refreshed.Token.Expiry, refreshed.Token.RefreshToken = time.Now().Add(-time.Minute), kept.Token.RefreshToken
	require.NoError(t, store.save(refreshed))
	assert.Equal(t, "alice", run())
	assert.EqualValues(t, 2, browser.opened.Load(), "a refused refresh token: the browser again")

	assert.Equal(t, 0, logoutFrom(store, rs.url, &stderr))
	_, err = os.Stat(store.path(rs.url))
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Equal(t, "alice", run())
	assert.EqualValues(t, 3, browser.opened.Load(), "after logout: the browser again")

	for _, secret := range []string{kept.Token.AccessToken, kept.Token.RefreshToken, refreshed.Token.AccessToken} {
		assert.NotContains(t, stderr.String(), secret, "a token is never shown")
	}
}

// A provider that refuses, at the authorization request (its refusal sent back through the
// browser) or at the token endpoint, ends the sign-in with the provider's words, once.
func TestSignInRefusedByAProvider(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)
	cases := []struct {
		name string
		// tamper changes the authorization request on its way to the provider, and the
		// response on its way back to elicit.
		tamper func(request, response url.Values)
		want   string
	}{
		// The request asks for an implicit grant, which elicit's registration does not
		// allow: the provider redirects back with unauthorized_client.
		{"authorization request", func(request, _ url.Values) { request.Set("response_type", "token") },
			"the authorization server refused the sign-in (unauthorized_client: "},
		// The code comes back altered: the provider's token endpoint refuses it.
		{"token endpoint", func(_, response url.Values) { response.Set("code", response.Get("code")+"x") },
			" asks elicit to sign in (401 Unauthorized), but the authorization server refused to issue a token (invalid_grant: invalid code)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr syncBuffer
			s := newSignIn(rs.url, &signIns{dir: t.TempDir()}, &stderr)
			var opened atomic.Int64
			s.browse = func(link string) error {
				opened.Add(1)
				u, err := url.Parse(link)
				if err != nil {
					return err
				}
				request := u.Query()
				c.tamper(request, url.Values{})
				u.RawQuery = request.Encode()
				back, _ := p.Login(context.Background(), u.String(), "alice") // its error: the refusal, in back
				c.tamper(url.Values{}, back)
				resp, err := http.Get(request.Get("redirect_uri") + "?" + back.Encode())
				if err != nil {
					return err
				}
				return resp.Body.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			defer cancel()
			cl := mcp.NewClient(&mcp.Implementation{Name: "elicit-test", Version: version}, nil)
			_, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.url, OAuthHandler: s}, nil)
			require.Error(t, err)
			require.Error(t, s.failure())
			assert.Contains(t, s.failure().Error(), c.want)
			assert.EqualValues(t, 1, opened.Load(), "a refused sign-in is not tried again in the same run")
		})
	}
}

// With --client-id-url, an authorization server that does not accept Client ID Metadata
// Documents (this provider does not advertise them) is registered with dynamically instead.
func TestSignInClientIDURLFallsBackToRegistration(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)
	store := &signIns{dir: t.TempDir()}
	var stderr syncBuffer
	s := newSignIn(rs.url, store, &stderr)
	s.clientIDURL = "https://elicit.example.com/client.json"
	s.browse = (&providerBrowser{p: p}).open
	assert.Equal(t, "user", whoami(t, rs, s))
	kept, err := store.load(rs.url)
	require.NoError(t, err)
	assert.NotEqual(t, s.clientIDURL, kept.ClientID, "the id dynamic registration gave")
	assert.True(t, strings.HasPrefix(kept.ClientID, "client-"), kept.ClientID)
}
