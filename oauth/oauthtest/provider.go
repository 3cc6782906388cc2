// Package oauthtest starts a real OAuth 2.1 / OpenID Connect provider in the test's process,
// for tests of resource servers and clients that sign in: zitadel's certified op package on
// an httptest server (loopback http, which the MCP authorization spec allows for
// development), with the project's own in-memory storage.
//
// A Provider serves:
//   - discovery, at /.well-known/oauth-authorization-server (RFC 8414) and
//     /.well-known/openid-configuration, both listing registration_endpoint;
//   - its JWKS (jwks_uri), which KeysDown turns into 503s and RotateKey extends (and
//     MetadataDown does the same to discovery);
//   - the authorization code flow with PKCE (S256). The login step approves at once, as the
//     person the request's login_hint names ("user" without one): a test plays the browser
//     with Login (or Browse, for a client that listens for the redirect itself), or
//     SignIn runs the whole flow for a token;
//   - dynamic client registration (RFC 7591) at /register, and RegisterClient for a
//     pre-registered one;
//   - refresh tokens (scope offline_access), rotated on each use;
//   - JWT access tokens (RFC 9068 shape) whose aud holds the RFC 8707 resource parameters of
//     the authorization request (and the client's id) and whose "scope" holds the scopes
//     granted; a client registered with Opaque gets opaque tokens instead, which the
//     introspection endpoint (RFC 7662) answers for a confidential client;
//   - client_credentials for confidential clients.
//
// Token, and the hostile variants in mint.go, sign tokens directly, for the cases no honest
// provider issues (expired, not yet valid, another audience, alg none, ...).
//
// For go-sdk's auth.AuthorizationCodeHandler, Login is the AuthorizationCodeFetcher's body
// (this package does not import the SDK: ask/layout_test.go keeps the SDK to ask, cmd/,
// examples/ and elicittest):
//
//	fetch := func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
//		q, err := p.Login(ctx, a.URL, "alice")
//		if err != nil {
//			return nil, err
//		}
//		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
//	}
//
// A Provider is safe for concurrent use; Start stops it when the test ends.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
)

// Provider is a running OpenID provider. Its fields are read-only.
type Provider struct {
	// Issuer is the provider's issuer identifier and base URL (http://127.0.0.1:PORT).
	Issuer string

	srv       *httptest.Server
	op        *op.Provider
	store     *storage
	keysDown  atomic.Bool
	metaDown  atomic.Bool
	keyReqs   atomic.Int64
	introReqs atomic.Int64

	strangerOnce sync.Once
	strangerKey  *rsa.PrivateKey
}

// Scopes are the scopes the provider advertises besides OpenID's own; it grants any scope
// asked for.
var Scopes = []string{"elicitd", "elicitd:admin"}

// AccessTokenLifetime is how long the access tokens the provider issues are valid.
const AccessTokenLifetime = 10 * time.Minute

// Start starts a provider on a loopback port; it stops when t ends.
func Start(t testing.TB) *Provider {
	t.Helper()
	p, err := New()
	if err != nil {
		t.Fatalf("oauthtest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// New starts a provider on a loopback port, for use outside a test's life (an Example, a
// TestMain); the caller closes it.
func New() (*Provider, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	// The issuer is the listener's address, known before the op is made; nothing is served
	// until the routes are all in place (Start).
	mux := http.NewServeMux()
	p := &Provider{srv: httptest.NewUnstartedServer(mux)}
	p.Issuer = "http://" + p.srv.Listener.Addr().String()
	p.store = &storage{
		clients: map[string]*client{}, requests: map[string]*authRequest{}, codes: map[string]string{},
		access: map[string]*grant{}, refresh: map[string]*grant{}, keys: []*signingKey{key},
	}
	cfg := &op.Config{
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       append([]string{oidc.ScopeOpenID, oidc.ScopeOfflineAccess}, Scopes...),
	}
	if _, err := rand.Read(cfg.CryptoKey[:]); err != nil {
		p.srv.Close()
		return nil, err
	}
	p.op, err = op.NewProvider(cfg, p.store, op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil {
		p.srv.Close()
		return nil, err
	}
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", p.discovery)
	mux.HandleFunc("POST /register", p.register)
	mux.HandleFunc("GET /login", p.login)
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		p.keyReqs.Add(1)
		if p.keysDown.Load() {
			http.Error(w, "keys down (oauthtest.KeysDown)", http.StatusServiceUnavailable)
			return
		}
		p.op.ServeHTTP(w, r)
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		// RFC 8707: the op package ignores resource; storage reads it from the context.
		if err := r.ParseForm(); err == nil && len(r.Form["resource"]) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, r.Form["resource"]))
		}
		p.op.ServeHTTP(w, r)
	})
	mux.HandleFunc(p.op.IntrospectionEndpoint().Relative(), func(w http.ResponseWriter, r *http.Request) {
		p.introReqs.Add(1)
		p.op.ServeHTTP(w, r)
	})
	mux.Handle("/", p.op)
	p.srv.Start()
	return p, nil
}

func newKey() (*signingKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &signingKey{id: "key-" + rand.Text()[:8], key: k}, nil
}

// Close stops the provider. Start calls it when the test ends.
func (p *Provider) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// KeysDown makes the JWKS endpoint answer 503 (down true) or serve again (false).
func (p *Provider) KeysDown(down bool) { p.keysDown.Store(down) }

// MetadataDown makes both discovery documents answer 503 (down true) or serve again.
func (p *Provider) MetadataDown(down bool) { p.metaDown.Store(down) }

// KeyRequests is how many requests the JWKS endpoint has had.
func (p *Provider) KeyRequests() int64 { return p.keyReqs.Load() }

// IntrospectionRequests is how many requests the introspection endpoint has had.
func (p *Provider) IntrospectionRequests() int64 { return p.introReqs.Load() }

// RotateKey adds a new signing key, published beside the old ones and used for every
// token signed from now on, and returns its key id.
func (p *Provider) RotateKey() (string, error) {
	k, err := newKey()
	if err != nil {
		return "", err
	}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys = append(p.store.keys, k)
	return k.id, nil
}

// discovery serves the op's OpenID configuration, with the registration endpoint the op
// package leaves to its user, at both well-known paths.
func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	if p.metaDown.Load() {
		http.Error(w, "metadata down (oauthtest.MetadataDown)", http.StatusServiceUnavailable)
		return
	}
	rec := httptest.NewRecorder()
	in := r.Clone(r.Context())
	in.URL.Path = "/.well-known/openid-configuration"
	p.op.ServeHTTP(rec, in)
	var doc map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		http.Error(w, "discovery: "+rec.Body.String(), http.StatusInternalServerError)
		return
	}
	doc["registration_endpoint"] = p.Issuer + "/register"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// ClientOptions shape a client RegisterClient registers.
type ClientOptions struct {
	// RedirectURIs are where the authorization response may go.
	RedirectURIs []string
	// Confidential gives the client a secret (client_secret_basic or _post); otherwise it
	// is public and uses PKCE alone.
	Confidential bool
	// Opaque makes the access tokens issued to the client opaque instead of JWTs.
	Opaque bool
}

// RegisterClient pre-registers a client and returns its id and, for a confidential one, its
// secret.
func (p *Provider) RegisterClient(o ClientOptions) (id, secret string) {
	c := &client{id: "client-" + rand.Text()[:10], redirects: o.RedirectURIs, opaque: o.Opaque}
	if o.Confidential {
		c.secret = rand.Text()
	}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.clients[c.id] = c
	return c.id, c.secret
}

// register is dynamic client registration (RFC 7591): a client that asks for
// token_endpoint_auth_method "none" is public; any other gets a secret.
func (p *Provider) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		ClientName              string   `json:"client_name"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client_metadata", "error_description": "redirect_uris is required"})
		return
	}
	method := md.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic" // RFC 7591's default
	}
	id, secret := p.RegisterClient(ClientOptions{RedirectURIs: md.RedirectURIs, Confidential: method != "none"})
	resp := map[string]any{
		"client_id": id, "client_id_issued_at": time.Now().Unix(), "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": method, "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "client_name": md.ClientName,
	}
	if secret != "" {
		resp["client_secret"], resp["client_secret_expires_at"] = secret, 0
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(resp)
}

// login is the provider's sign-in page, which approves at once and sends the browser back
// to the op's callback.
func (p *Provider) login(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if err := p.store.approve(id); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, op.AuthCallbackURL(p.op)(op.ContextWithIssuer(r.Context(), p.Issuer), id), http.StatusFound)
}

// Login plays a person's browser on authURL (an authorization request to this provider):
// it signs in as subject ("" is "user"), follows the provider's redirects, and returns
// the authorization response the client's redirect URI would get: its query parameters
// (code, state, iss), or an error naming the provider's error parameters.
func (p *Provider) Login(ctx context.Context, authURL, subject string) (url.Values, error) {
	back, err := p.toClient(ctx, authURL, subject)
	if err != nil {
		return nil, err
	}
	q := back.Query()
	if e := q.Get("error"); e != "" {
		return q, fmt.Errorf("oauthtest: the provider refused: %s: %s", e, q.Get("error_description"))
	}
	if q.Get("code") == "" {
		return q, errors.New("oauthtest: the redirect to the client has no code")
	}
	return q, nil
}

// Browse is Login for a client that receives the authorization response itself (a CLI
// listening on a loopback redirect URI): it signs in as subject, follows the provider's
// redirects and then the one to the client, as a browser would, and returns the status the
// client answered with.
func (p *Provider) Browse(ctx context.Context, authURL, subject string) (int, error) {
	back, err := p.toClient(ctx, authURL, subject)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, back.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// toClient runs the browser's part of an authorization request up to the redirect that
// leaves the provider, and returns where it goes.
func (p *Provider) toClient(ctx context.Context, authURL, subject string) (*url.URL, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	if subject != "" {
		q := u.Query()
		q.Set("login_hint", subject)
		u.RawQuery = q.Encode()
	}
	issuer, _ := url.Parse(p.Issuer)
	hc := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != issuer.Host {
			return http.ErrUseLastResponse // the redirect to the client: not followed here
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return nil, fmt.Errorf("oauthtest: the authorization request ended %s, not in a redirect to the client: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Request.URL.Parse(loc)
}

// SignIn registers a client with o (redirecting to a made-up loopback URI when o names
// none), runs the authorization code flow with PKCE for it as subject, asking for resource
// (RFC 8707; "" asks for none) and scopes, and returns the token response: a shortcut for
// tests that need a token as the provider issues it, without an OAuth client of their own.
func (p *Provider) SignIn(ctx context.Context, o ClientOptions, subject, resource string, scopes ...string) (*oauth2.Token, error) {
	if len(o.RedirectURIs) == 0 {
		o.RedirectURIs = []string{"http://127.0.0.1:1/callback"}
	}
	id, secret := p.RegisterClient(o)
	cfg := &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: o.RedirectURIs[0], Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.op.AuthorizationEndpoint().Absolute(p.Issuer),
			TokenURL: p.op.TokenEndpoint().Absolute(p.Issuer), AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	q, err := p.Login(ctx, cfg.AuthCodeURL(rand.Text(), opts...), subject)
	if err != nil {
		return nil, err
	}
	return cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
}
