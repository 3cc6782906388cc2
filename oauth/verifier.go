// Package oauth is elicitd's OAuth 2.1 resource server, as the MCP authorization spec
// (2025-11-25, 2026-07-28) asks of an MCP server: it verifies the access tokens clients
// bring, issued by the authorization servers it is told to trust, for the resource it is.
//
// A Verifier accepts a token when:
//   - a JWT access token: its signature verifies with a key from its issuer's JWKS (under an
//     asymmetric algorithm only: RS*, PS*, ES*, EdDSA; never "none", never an HMAC),
//     its iss is one of the trusted issuers, its aud holds the resource (RFC 8707), it has
//     exp and sub, and exp, nbf and iat hold with a leeway of DefaultLeeway;
//   - any other token: an issuer that offers RFC 7662 introspection, asked with the client
//     credentials the Verifier was given, says it is active, for the resource and (when it
//     says) not expired. An active answer is kept for IntrospectionCacheFor.
//
// Metadata comes from RFC 8414 discovery, then OpenID Connect discovery; keys from the
// metadata's jwks_uri. Both are fetched on first use and kept; see issuerState for when
// keys are fetched again. Scopes are the caller's to check against the token's (Missing).
//
// The package imports no MCP SDK: cmd/elicitd wraps Claims into the SDK's TokenInfo, and
// serves the protected resource metadata (RFC 9728) at MetadataPath. Nothing here logs,
// and no error carries a token.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Config is a Verifier's settings.
type Config struct {
	// Resource is the protected resource's identifier, the MCP endpoint's public URL; every
	// token's audience must hold it.
	Resource string
	// Issuers are the authorization servers whose tokens are accepted, by issuer
	// identifier, exactly as their metadata says it.
	Issuers []string
	// ClientID and ClientSecret authenticate introspection requests (client_secret_basic);
	// without them opaque tokens are refused.
	ClientID, ClientSecret string
	// HTTPClient fetches metadata and keys and introspects; nil: a client with a 10s timeout.
	HTTPClient *http.Client
	// Clock tells the time; nil: the system's.
	Clock clock.Clock
}

const (
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// DefaultRefreshEvery is the least time between two fetches of an issuer's keys.
	DefaultRefreshEvery = 5 * time.Second
)

// Claims is what a verified token says of its bearer.
type Claims struct {
	Issuer  string    // iss: the authorization server
	Subject string    // sub: the person (or client) the token stands for
	Scopes  []string  // scope (or scp): the scopes granted
	Expiry  time.Time // exp; zero only for an introspected token that did not say
}

// Errors of Verify, to tell with errors.Is.
var (
	// ErrInvalidToken: the token is not acceptable (a 401 with error="invalid_token").
	ErrInvalidToken = errors.New("invalid token")
	// ErrUnavailable: the token cannot be checked now: its issuer's keys or introspection
	// endpoint cannot be reached and nothing is held to check it with (a 503).
	ErrUnavailable = errors.New("authorization server unavailable")
)

// allowedAlgorithms are the JWS algorithms a token may be signed with: asymmetric only.
var allowedAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	issuers map[string]*issuerState

	cacheMu sync.Mutex                                      // guards answers (simplelru is not safe for concurrent use)
	answers *simplelru.LRU[[sha256.Size]byte, cachedAnswer] // active introspection answers, by the token's hash
}

// New returns a Verifier for cfg, or an error naming what is wrong with it. It fetches
// nothing yet.
func New(cfg Config) (*Verifier, error) {
	if err := CheckServerURL(cfg.Resource); err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("no issuer")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: fetchTimeout}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	answers, err := simplelru.NewLRU[[sha256.Size]byte, cachedAnswer](introspectionCacheSize, nil)
	if err != nil {
		return nil, err
	}
	v := &Verifier{cfg: cfg, issuers: map[string]*issuerState{}, answers: answers}
	for _, iss := range cfg.Issuers {
		if err := CheckServerURL(iss); err != nil {
			return nil, fmt.Errorf("issuer: %w", err)
		}
		v.issuers[iss] = &issuerState{issuer: iss, client: cfg.HTTPClient, clock: cfg.Clock}
	}
	return v, nil
}

// Verify checks token and returns what it says. Its errors wrap ErrInvalidToken or
// ErrUnavailable, and never hold the token.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	if jwsShaped(token) {
		return v.verifyJWT(ctx, token)
	}
	return v.introspect(ctx, token)
}

// jwsShaped reports whether token is a JWS in compact form (three parts, the first a JSON
// header with an alg): such a token is checked as a JWT, never introspected.
func jwsShaped(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var header struct {
		Alg string `json:"alg"`
	}
	return json.Unmarshal(h, &header) == nil && header.Alg != ""
}

// tokenClaims are the claims read from a JWT besides the registered ones.
type tokenClaims struct {
	Scope string          `json:"scope"`
	Scp   json.RawMessage `json:"scp"` // Okta and Entra ID: a list, or a space-separated string
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidToken}, args...)...)
}

func (v *Verifier) verifyJWT(ctx context.Context, token string) (*Claims, error) {
	tok, err := jwt.ParseSigned(token, allowedAlgorithms)
	if err != nil {
		return nil, invalid("not a JWT signed with an allowed algorithm (%s)", algorithmNames())
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, invalid("unreadable claims")
	}
	st, ok := v.issuers[unverified.Issuer]
	if !ok {
		return nil, invalid("issuer %q is not one elicitd trusts (--auth-issuer)", unverified.Issuer)
	}
	h := tok.Headers[0]
	keys, err := st.key(ctx, h.KeyID)
	if errors.Is(err, errNoKeys) {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err != nil {
		return nil, invalid("%v", err)
	}
	var std jwt.Claims
	var extra tokenClaims
	verified := false
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue // a key published for one algorithm verifies that one only
		}
		if tok.Claims(k.Key, &std, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, invalid("the signature does not verify with the issuer's key %q", h.KeyID)
	}
	if std.Expiry == nil {
		return nil, invalid("no exp")
	}
	if std.Subject == "" {
		return nil, invalid("no sub")
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: st.issuer, AnyAudience: jwt.Audience{v.cfg.Resource}, Time: v.cfg.Clock.Now()}, DefaultLeeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("its audience %q does not include %s (--public-url)", []string(std.Audience), v.cfg.Resource)
	case errors.Is(err, jwt.ErrExpired):
		return nil, invalid("expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, invalid("not valid yet")
	case err != nil:
		return nil, invalid("%v", err)
	}
	return &Claims{Issuer: st.issuer, Subject: std.Subject, Scopes: scopes(extra), Expiry: std.Expiry.Time()}, nil
}

func algorithmNames() string {
	names := make([]string, len(allowedAlgorithms))
	for i, a := range allowedAlgorithms {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// scopes reads "scope" (RFC 9068, space-separated) or, without it, "scp".
func scopes(c tokenClaims) []string {
	if c.Scope != "" {
		return strings.Fields(c.Scope)
	}
	var list []string
	if json.Unmarshal(c.Scp, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(c.Scp, &s) == nil {
		return strings.Fields(s)
	}
	return nil
}

// Missing returns the scopes of required that c lacks, in order.
func (c *Claims) Missing(required []string) []string {
	var out []string
	for _, s := range required {
		if !slices.Contains(c.Scopes, s) {
			out = append(out, s)
		}
	}
	return out
}

// MetadataPath is where the protected resource metadata (RFC 9728 §3.1) of resource is:
// the well-known path with the resource's path appended
// (/.well-known/oauth-protected-resource/mcp for https://host/mcp).
func MetadataPath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return "/.well-known/oauth-protected-resource"
	}
	return "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataURL is the absolute URL of MetadataPath on resource's host.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath(resource)
}

// LoopbackHost reports whether host (a name or an address, without port) is this machine
// only. An empty host listens on every interface, which is not.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
