package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's memory: clients, authorization requests, tokens and keys, behind
// one mutex (the op package serves requests on many goroutines). It implements op.Storage.
type storage struct {
	mu       sync.Mutex
	clients  map[string]*client
	requests map[string]*authRequest // by id
	codes    map[string]string       // code -> request id
	access   map[string]*grant       // access token id -> grant
	refresh  map[string]*grant       // refresh token -> grant
	keys     []*signingKey           // the last signs; all are published
}

var _ op.Storage = (*storage)(nil)

// errNotFound is any unknown id, code or token.
var errNotFound = errors.New("oauthtest: not found")

func newID() string { return rand.Text() }

// client is a registered OAuth client: public (no secret, PKCE) or confidential.
type client struct {
	id, secret string
	redirects  []string
	opaque     bool // access tokens are opaque (introspect them) instead of JWTs
}

var _ op.Client = (*client)(nil)

func (c *client) GetID() string                    { return c.id }
func (c *client) RedirectURIs() []string           { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeNative
}
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken, oidc.GrantTypeClientCredentials}
}

// LoginURL is the provider's own /login (Provider.login), on the issuer's host.
func (c *client) LoginURL(id string) string { return "/login?id=" + id }
func (c *client) AccessTokenType() op.AccessTokenType {
	if c.opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
func (c *client) IDTokenLifetime() time.Duration { return 5 * time.Minute }

// DevMode lets redirect URIs be http:// on loopback, as a CLI's are.
func (c *client) DevMode() bool { return true }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(string) bool           { return true }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }

// authRequest is one authorization request, from /authorize to the code's exchange.
type authRequest struct {
	id, clientID, redirectURI, state, nonce string
	scopes, audience                        []string
	responseType                            oidc.ResponseType
	responseMode                            oidc.ResponseMode
	challenge                               *oidc.CodeChallenge
	loginHint                               string
	subject                                 string
	authTime                                time.Time
	done                                    bool
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// grant is what a token stands for: who, for which client, which scopes and audience.
type grant struct {
	id, subject, clientID string
	scopes, audience      []string
	authTime, expiry      time.Time
}

var _ op.RefreshTokenRequest = (*grant)(nil)

func (g *grant) GetAMR() []string            { return []string{"pwd"} }
func (g *grant) GetAudience() []string       { return g.audience }
func (g *grant) GetAuthTime() time.Time      { return g.authTime }
func (g *grant) GetClientID() string         { return g.clientID }
func (g *grant) GetScopes() []string         { return g.scopes }
func (g *grant) GetSubject() string          { return g.subject }
func (g *grant) SetCurrentScopes(s []string) { g.scopes = s }

// signingKey is one RSA key pair, published in the JWKS under its id.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k *signingKey) Use() string                                 { return "sig" }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is the public half of a signingKey, as op.Key wants it.
type publicKey struct{ *signingKey }

func (k publicKey) Key() any { return &k.key.PublicKey }

// Key is the private key (op.SigningKey's meaning).
func (k *signingKey) Key() any { return k.key }

// resourceKey carries the RFC 8707 resource parameters of an /authorize request to
// CreateAuthRequest (the op package parses no resource parameter itself).
type resourceKey struct{}

func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	resources, _ := ctx.Value(resourceKey{}).([]string)
	a := &authRequest{
		id: newID(), clientID: req.ClientID, redirectURI: req.RedirectURI, state: req.State, nonce: req.Nonce,
		scopes: req.Scopes, responseType: req.ResponseType, responseMode: req.ResponseMode, loginHint: req.LoginHint,
		// The token is for the resources asked for (RFC 8707), and for the client itself (an
		// ID token's audience).
		audience: append(slices.Clone(resources), req.ClientID),
	}
	if req.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.requests[id]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("authorization request %q: %w", id, errNotFound)
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("code: %w", errNotFound)
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code) // a code is used once
		}
	}
	return nil
}

// approve is the login step: the person hint names (or "user") signs in and consents.
func (s *storage) approve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return fmt.Errorf("authorization request %q: %w", id, errNotFound)
	}
	a.subject, a.authTime, a.done = a.loginHint, time.Now(), true
	if a.subject == "" {
		a.subject = "user"
	}
	return nil
}

// newGrant records an access token for req and returns it.
func (s *storage) newGrant(req op.TokenRequest) *grant {
	g := &grant{id: newID(), subject: req.GetSubject(), scopes: req.GetScopes(), audience: req.GetAudience(),
		expiry: time.Now().Add(AccessTokenLifetime), authTime: time.Now()}
	switch r := req.(type) {
	case op.AuthRequest:
		g.clientID, g.authTime = r.GetClientID(), r.GetAuthTime()
	case *grant:
		g.clientID, g.authTime = r.clientID, r.authTime
	case *clientCredentials:
		g.clientID = r.clientID
	}
	s.access[g.id] = g
	return g
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.newGrant(req)
	return g.id, g.expiry, nil
}

func (s *storage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if current != "" {
		if _, ok := s.refresh[current]; !ok {
			return "", "", time.Time{}, fmt.Errorf("refresh token: %w", errNotFound)
		}
		delete(s.refresh, current) // rotated: each refresh token is used once
	}
	g := s.newGrant(req)
	rt := newID()
	s.refresh[rt] = &grant{id: g.id, subject: g.subject, clientID: g.clientID, scopes: g.scopes, audience: g.audience, authTime: g.authTime}
	return g.id, rt, g.expiry, nil
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.refresh[token]; ok {
		c := *g
		return &c, nil
	}
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.access, tokenOrID)
	delete(s.refresh, tokenOrID)
	return nil
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, _ string, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.refresh[token]; ok {
		return g.subject, token, nil
	}
	return "", "", op.ErrInvalidRefreshToken
}

// current is the key that signs now: the last one added.
func (s *storage) current() *signingKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return s.current(), nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		keys[i] = publicKey{k}
	}
	return keys, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("client %q: %w", id, errNotFound)
}

func (s *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok && c.secret != "" && c.secret == secret {
		return nil
	}
	return fmt.Errorf("client %q or its secret: %w", id, errNotFound)
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, _, subject, _ string) error {
	info.Subject = subject
	return nil
}

// SetIntrospectionFromToken answers RFC 7662 introspection of a token this provider issued.
func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.access[tokenID]
	if !ok || g.subject != subject || time.Now().After(g.expiry) {
		return fmt.Errorf("access token: %w", errNotFound)
	}
	resp.Active = true
	resp.Scope = g.scopes
	resp.ClientID = g.clientID
	resp.Subject = g.subject
	resp.Audience = g.audience
	resp.Expiration = oidc.FromTime(g.expiry)
	resp.TokenType = oidc.BearerToken
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetPrivateClaimsFromRequest puts the granted scopes in a JWT access token, as "scope"
// (RFC 9068).
func (s *storage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	return map[string]any{"scope": strings.Join(req.GetScopes(), " ")}, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, fmt.Errorf("JWT profile keys: %w", errNotFound)
}

func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}

func (s *storage) Health(context.Context) error { return nil }

// clientCredentials is a client_credentials grant's request: the client is its own subject.
type clientCredentials struct {
	clientID string
	scopes   []string
}

func (c *clientCredentials) GetSubject() string    { return c.clientID }
func (c *clientCredentials) GetAudience() []string { return []string{c.clientID} }
func (c *clientCredentials) GetScopes() []string   { return c.scopes }

func (s *storage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok && c.secret != "" && c.secret == secret {
		return c, nil
	}
	return nil, fmt.Errorf("client %q or its secret: %w", id, errNotFound)
}

func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	return &clientCredentials{clientID: id, scopes: scopes}, nil
}
