// Package ups is a client for the UPS Shipping and Rating REST APIs: OAuth client
// credentials with a shared, cached token, the three headers UPS wants on every call, and
// UPS's error bodies turned into one typed error.
package ups

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/elicitd/elicitd/validator"
)

// Base URLs: Environment "production" selects ProductionURL; "test", "cie" or none the
// customer integration environment (CIE).
const (
	ProductionURL = "https://onlinetools.ups.com"
	CIEURL        = "https://wwwcie.ups.com"
)

// DefaultTimeout bounds one call (token fetch included) when Config sets none.
const DefaultTimeout = 30 * time.Second

// refreshEarly is how long before its expiry a token is replaced.
const refreshEarly = 60 * time.Second

// Config says where and as whom to call UPS.
type Config struct {
	ClientID     string
	ClientSecret string
	Environment  string // "production", or "test" (also "cie") or empty for CIE
	BaseURL      string // overrides Environment, for sandboxes and tests: an https URL
	// AllowLocal lets BaseURL be plain http and name a loopback or private address, for
	// tests against a local fake of UPS (ELICITD_UPS_ALLOW_LOCAL=1). It covers BaseURL's
	// host only: without a HTTPClient of the caller's, every connection goes to a public
	// address (checked at connect time, after DNS) and every other hop, redirects included,
	// must be https.
	AllowLocal     bool
	AccountNumber  string // the default shipper number and bill-shipper account
	TransactionSrc string // the transactionSrc header when a call gives none; "elicitd"
	Timeout        time.Duration
	HTTPClient     *http.Client
	Clock          clock.Clock // for token expiry
}

// ConfigFromEnv reads UPS_CLIENT_ID, UPS_CLIENT_SECRET, UPS_ENVIRONMENT, UPS_ACCOUNT_NUMBER,
// UPS_BASE_URL and ELICITD_UPS_ALLOW_LOCAL, accepting the older names CLIENT_ID,
// CLIENT_SECRET and ENVIRONMENT that existing UPS MCP setups use. A value it cannot use is an
// error naming the variable and what it accepts.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	first := func(names ...string) (string, string) {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v, n
			}
		}
		return "", names[0]
	}
	c := Config{AccountNumber: strings.TrimSpace(getenv("UPS_ACCOUNT_NUMBER"))}
	c.ClientID, _ = first("UPS_CLIENT_ID", "CLIENT_ID")
	c.ClientSecret, _ = first("UPS_CLIENT_SECRET", "CLIENT_SECRET")
	var envName string
	c.Environment, envName = first("UPS_ENVIRONMENT", "ENVIRONMENT")
	c.BaseURL, _ = first("UPS_BASE_URL")
	switch v := strings.TrimSpace(getenv("ELICITD_UPS_ALLOW_LOCAL")); strings.ToLower(v) {
	case "", "0", "false":
	case "1", "true":
		c.AllowLocal = true
	default:
		return c, fmt.Errorf("ELICITD_UPS_ALLOW_LOCAL must be 1 or 0 (true or false), got %q", v)
	}
	if err := c.check(envName); err != nil {
		return c, err
	}
	return c, nil
}

// check reports the first setting of c that cannot be used; envName names the environment
// variable Environment came from.
func (c Config) check(envName string) error {
	switch strings.ToLower(c.Environment) {
	case "", "test", "cie", "production":
	default:
		return fmt.Errorf("%s must be \"test\" (or \"cie\") or \"production\", got %q", envName, c.Environment)
	}
	if c.BaseURL == "" {
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	want := "an https:// URL such as " + CIEURL
	if c.AllowLocal {
		want = "an http:// or https:// URL"
	}
	switch {
	case err != nil || u.Host == "" || u.Opaque != "" || u.User != nil:
		return fmt.Errorf("UPS_BASE_URL must be %s, got %q", want, c.BaseURL)
	case u.Scheme == "https", u.Scheme == "http" && c.AllowLocal:
		return nil
	}
	return fmt.Errorf("UPS_BASE_URL must be %s (plain http only with ELICITD_UPS_ALLOW_LOCAL=1, for tests), got %q", want, c.BaseURL)
}

// Configured reports whether credentials are set.
func (c Config) Configured() bool { return c.ClientID != "" && c.ClientSecret != "" }

// Client calls UPS. It is safe for concurrent use; concurrent callers share one token
// refresh.
type Client struct {
	cfg   Config
	base  string
	http  *http.Client
	clk   clock.Clock
	group singleflight.Group

	mu      sync.Mutex
	token   string
	expires time.Time
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	c := &Client{cfg: cfg, http: cfg.HTTPClient, clk: cfg.Clock}
	switch {
	case cfg.BaseURL != "":
		c.base = strings.TrimRight(cfg.BaseURL, "/")
	case strings.EqualFold(cfg.Environment, "production"):
		c.base = ProductionURL
	default:
		c.base = CIEURL
	}
	if c.http == nil {
		c.http = c.guardedClient()
	}
	if c.clk == nil {
		c.clk = clock.New()
	}
	if c.cfg.Timeout == 0 {
		c.cfg.Timeout = DefaultTimeout
	}
	if c.cfg.TransactionSrc == "" {
		c.cfg.TransactionSrc = "elicitd"
	}
	return c
}

// guardedClient is the HTTP client of a Client whose caller gave none: it connects only to
// public addresses (validator.GuardDialer, checked at connect time so DNS cannot rebind past
// it) and follows a redirect only to an https URL, at most 5 times. With AllowLocal, the base
// URL's own host and port are exempt from both rules, and nothing else is.
func (c *Client) guardedClient() *http.Client {
	var local string // the base URL's host:port, when AllowLocal exempts it
	if u, err := url.Parse(c.base); err == nil && c.cfg.AllowLocal {
		local = u.Host
		if u.Port() == "" {
			local = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
		}
	}
	guard := validator.GuardDialer(&net.Dialer{Timeout: 10 * time.Second})
	plain := &net.Dialer{Timeout: 10 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a proxy would connect on our behalf, past the guard
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if local != "" && addr == local {
			return plain.DialContext(ctx, network, addr)
		}
		return guard.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("UPS redirected more than 5 times")
		}
		if local != "" && req.URL.Host == local {
			return nil
		}
		return checkRedirect(req.URL)
	}}
}

// checkRedirect refuses a redirect, before anything is sent, to a literal non-public address
// (however spelt: IPv4-mapped IPv6 is judged by its IPv4 address) or to a URL that is not
// https. Both errors are *validator.URLError and name the host as the redirect wrote it. A
// name is left to the guarded dialer, which checks every address it resolves to.
func checkRedirect(u *url.URL) error {
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil && !validator.IsPublicAddr(a) {
		return &validator.URLError{Reason: "private_address",
			Message: fmt.Sprintf("UPS redirected to the non-public address %s; not followed", host)}
	}
	if u.Scheme != "https" {
		return &validator.URLError{Reason: "scheme",
			Message: fmt.Sprintf("UPS redirected to a %s:// URL on %s; only https is followed", u.Scheme, host)}
	}
	return nil
}

// CallOptions are a call's optional headers; empty means the defaults (a fresh UUID for
// transId, the configured transactionSrc).
type CallOptions struct {
	TransID        string
	TransactionSrc string
}

// ShipPath and RatePath build the endpoints' paths.
func ShipPath(version string) string { return "/api/shipments/" + url.PathEscape(version) + "/ship" }

// RatePath is the rating endpoint's path for a canonical request option.
func RatePath(version, option string) string {
	return "/api/rating/" + url.PathEscape(version) + "/" + url.PathEscape(option)
}

// Endpoint returns the full URL for path and query, as a call would use it.
func (c *Client) Endpoint(path string, query url.Values) string {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// APIError is a non-2xx answer from UPS.
type APIError struct {
	StatusCode int    `json:"status_code"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Details    any    `json:"details,omitempty"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("UPS API error %d (%s): %s", e.StatusCode, e.Code, e.Message)
}

// Post sends body as JSON to path with query, with a bearer token, and returns UPS's JSON
// answer. A 401 forces one token refresh and one retry. Errors: *APIError for a non-2xx
// answer, otherwise the transport's error (wrapped), including the context's.
func (c *Client) Post(ctx context.Context, path string, query url.Values, body any, opts CallOptions) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("ups: encoding the request body: %w", err)
	}
	if opts.TransID == "" {
		opts.TransID = uuid.NewString()
	}
	if opts.TransactionSrc == "" {
		opts.TransactionSrc = c.cfg.TransactionSrc
	}
	stale := ""
	for attempt := 0; ; attempt++ {
		tok, err := c.bearer(ctx, stale)
		if err != nil {
			return nil, err
		}
		status, respBody, err := c.send(ctx, c.Endpoint(path, query), payload, tok, opts)
		if err != nil {
			return nil, err
		}
		if status == http.StatusUnauthorized && attempt == 0 {
			stale = tok // the token was refused: fetch a new one, once
			continue
		}
		if status < 200 || status > 299 {
			return nil, apiError(status, respBody)
		}
		return json.RawMessage(respBody), nil
	}
}

func (c *Client) send(ctx context.Context, endpoint string, payload []byte, tok string, opts CallOptions) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("ups: building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("transId", opts.TransID)
	req.Header.Set("transactionSrc", opts.TransactionSrc)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("ups: calling %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("ups: reading the answer from %s: %w", endpoint, err)
	}
	return resp.StatusCode, b, nil
}

// bearer returns a valid token: the cached one unless it is about to expire or is the one
// just refused (stale). Concurrent callers share one fetch.
func (c *Client) bearer(ctx context.Context, stale string) (string, error) {
	c.mu.Lock()
	tok, fresh := c.token, c.clk.Now().Before(c.expires.Add(-refreshEarly))
	c.mu.Unlock()
	if tok != "" && fresh && tok != stale {
		return tok, nil
	}
	ch := c.group.DoChan("token", func() (any, error) {
		// Re-check: the fetch that just finished may have answered this caller already.
		c.mu.Lock()
		tok, fresh := c.token, c.clk.Now().Before(c.expires.Add(-refreshEarly))
		c.mu.Unlock()
		if tok != "" && fresh && tok != stale {
			return tok, nil
		}
		// Not tied to one caller: others wait on the same fetch.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		defer cancel()
		return c.fetchToken(fctx)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("ups: waiting for a token: %w", ctx.Err())
	}
}

// ErrAuth is matched by a refused token request.
var ErrAuth = errors.New("ups: authentication failed")

func (c *Client) fetchToken(ctx context.Context) (string, error) {
	endpoint := c.base + "/security/v1/oauth/token"
	form := url.Values{"grant_type": {"client_credentials"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("ups: building the token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(c.cfg.ClientID, c.cfg.ClientSecret)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("ups: requesting a token: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("ups: reading the token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %w", ErrAuth, apiError(resp.StatusCode, b))
	}
	var t struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"` // UPS sends it as a string
	}
	if err := json.Unmarshal(b, &t); err != nil || t.AccessToken == "" {
		return "", fmt.Errorf("%w: the token answer has no access_token", ErrAuth)
	}
	secs, err := strconv.ParseFloat(strings.Trim(string(t.ExpiresIn), `"`), 64)
	if err != nil || secs <= 0 {
		secs = 0 // unknown lifetime: use it for this call only
	}
	c.mu.Lock()
	c.token, c.expires = t.AccessToken, c.clk.Now().Add(time.Duration(secs*float64(time.Second)))
	c.mu.Unlock()
	return t.AccessToken, nil
}

// apiError maps a UPS error body: code from code, errorCode or response.errors[0].code, else
// the status; message from message or response.errors[0].message, else a generic line.
func apiError(status int, body []byte) *APIError {
	e := &APIError{StatusCode: status, Code: strconv.Itoa(status), Message: fmt.Sprintf("UPS API returned HTTP %d", status)}
	var parsed map[string]any
	if json.Unmarshal(body, &parsed) != nil {
		if len(body) > 0 {
			e.Details = string(body)
		}
		return e
	}
	e.Details = parsed
	var first map[string]any
	if r, ok := parsed["response"].(map[string]any); ok {
		if errs, ok := r["errors"].([]any); ok && len(errs) > 0 {
			first, _ = errs[0].(map[string]any)
		}
	}
	if s := firstString(parsed["code"], parsed["errorCode"], first["code"]); s != "" {
		e.Code = s
	}
	if s := firstString(parsed["message"], first["message"]); s != "" {
		e.Message = s
	}
	return e
}

func firstString(vals ...any) string {
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			if x != "" {
				return x
			}
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
	}
	return ""
}
