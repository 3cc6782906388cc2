package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// defaultSignInWait bounds how long elicit waits for the person to finish signing in in the
// browser (--sign-in-timeout).
const defaultSignInWait = 5 * time.Minute

// signIn is how elicit signs in to a server at --url that answers 401 when no static token
// is given: the OAuth 2.1 authorization code flow with PKCE, run by go-sdk's
// auth.AuthorizationCodeHandler. The server's protected resource metadata (RFC 9728) names
// its authorization server; elicit registers with it by its Client ID Metadata Document
// (--client-id-url, where the authorization server supports those) or else dynamically
// (RFC 7591), listens on a loopback port for the browser to come back (RFC 8252), opens the
// authorization link in the browser (or with --no-open prints it on stderr), and waits at
// most --sign-in-timeout. The tokens are kept in the user's config directory (signIns) and
// the access token refreshed from it, so a later run needs no browser.
//
// signIn implements auth.OAuthHandler for the Streamable HTTP transport: the transport asks
// TokenSource for every request, and on a 401 calls Authorize and tries again once. Safe
// for concurrent use; one sign-in runs at a time.
type signIn struct {
	server       string   // --url
	store        *signIns // where the sign-in is kept
	open         bool     // open the browser, else only print the link
	wait         time.Duration
	clientIDURL  string       // --client-id-url, or ""
	clientID     string       // --client-id: registered beforehand, or ""
	clientSecret string       // --client-secret-file's secret, or "" (a public client)
	httpClient   *http.Client // to the authorization server
	stderr       io.Writer
	browse       func(link string) error // opens a link in the browser

	signing sync.Mutex // held while signing in

	mu     sync.Mutex
	ts     oauth2.TokenSource // the kept or new sign-in's, or nil: a new one at every sign-in
	failed error              // why the last sign-in failed, for the person
}

// newSignIn prepares signing in to server, starting from the sign-in kept for it, if any.
// A kept sign-in that cannot be read is reported on stderr and signed in again.
func newSignIn(server string, store *signIns, stderr io.Writer) *signIn {
	s := &signIn{
		server: server,
		store:  store,
		open:   true,
		wait:   defaultSignInWait,
		// The authorization server is the person's to choose, as the server at --url is:
		// it may well be on their own network. A transport with its own dialer opts out of
		// the SDK's guard against reaching private addresses, meant for servers that
		// fetch URLs on behalf of others.
		httpClient: &http.Client{Transport: http.DefaultTransport, Timeout: 30 * time.Second},
		stderr:     stderr,
		browse:     openBrowser,
	}
	record, err := store.load(server)
	if err != nil {
		fmt.Fprintf(stderr, "elicit: warning: %v\n", err)
	}
	if record != nil {
		s.ts = s.keep(record.config(), record)
	}
	return s
}

// keep returns the token source of a sign-in, which refreshes its access token when it has
// expired and keeps every new token in the sign-in's file.
func (s *signIn) keep(cfg *oauth2.Config, record *signInRecord) *keptTokens {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.httpClient)
	return &keptTokens{base: cfg.TokenSource(ctx, record.Token), store: s.store, stderr: s.stderr, record: *record}
}

// TokenSource returns the sign-in's token source, or nil before elicit has signed in.
func (s *signIn) TokenSource(context.Context) (oauth2.TokenSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ts, nil
}

// failure returns why the last sign-in failed, or nil.
func (s *signIn) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Authorize signs in, after the server answered req with resp (a 401, or a 403 that asks
// for more scopes). It returns once elicit has a token, or the sign-in failed.
func (s *signIn) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	s.mu.Lock()
	before := s.ts // every sign-in sets a new one: if it changes, another request signed in
	s.mu.Unlock()
	s.signing.Lock()
	defer s.signing.Unlock()
	s.mu.Lock()
	again, failed := s.ts != before, s.failed
	s.mu.Unlock()
	switch {
	case again: // another request signed in meanwhile: try its token
		_ = resp.Body.Close()
		return nil
	case failed != nil: // a failed sign-in is final for the run: the person is not asked twice
		_ = resp.Body.Close()
		return failed
	}
	ts, err := s.authorize(ctx, req, resp)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = err
	if err != nil {
		return err
	}
	if ts != nil { // nil: a 403 sign-in cannot help; the request is tried again as it was
		s.ts = ts
	}
	return nil
}

func (s *signIn) authorize(ctx context.Context, req *http.Request, resp *http.Response) (*keptTokens, error) {
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp) {
		// Refused for a reason no sign-in changes (an Origin, a question of another
		// caller's): the request is tried again as it was, and its 403 reported.
		_ = resp.Body.Close()
		return nil, nil
	}
	u, _ := url.Parse(s.server) // checked by parse
	if !httpsOrLoopback(u) {
		_ = resp.Body.Close()
		return nil, &signInError{server: s.server, status: resp.StatusCode,
			reason: "it is plain http to another machine, and elicit signs in only over https, or http to this machine"}
	}
	if err := s.findMetadata(ctx, u, resp); err != nil {
		_ = resp.Body.Close()
		return nil, err
	}
	// The browser comes back to a port of elicit's own on the loopback interface.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("cannot listen on a loopback port for the browser to come back to: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	var kept *keptTokens
	cfg := &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:              "elicit",
				RedirectURIs:            []string{redirect},
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
				SoftwareID:              "github.com/elicitd/elicitd/cmd/elicit",
				SoftwareVersion:         version,
			},
		},
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return s.fetchCode(ctx, ln, args)
		},
		RequestRefreshToken: true,
		Client:              s.httpClient,
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			record := &signInRecord{
				Server: s.server, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
				AuthStyle: cfg.Endpoint.AuthStyle, AuthURL: cfg.Endpoint.AuthURL, TokenURL: cfg.Endpoint.TokenURL,
				Scopes: cfg.Scopes, Token: tok,
			}
			if err := s.store.save(record); err != nil {
				fmt.Fprintf(s.stderr, "elicit: warning: %v; the next run signs in again\n", err)
			}
			// The SDK's ctx is keep's: the background one, with s.httpClient for refreshes.
			kept = s.keep(cfg, record)
			return kept, nil
		},
	}
	if s.clientIDURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: s.clientIDURL}
	}
	if s.clientID != "" {
		// Registered beforehand: used instead of registering (but for a Client ID Metadata
		// Document, which the SDK prefers where the authorization server accepts one).
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: s.clientID}
		if s.clientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s.clientSecret}
		}
	}
	if resp.StatusCode == http.StatusForbidden {
		widenScope(resp, s.heldScopes())
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("cannot prepare to sign in: %w", err)
	}
	status := resp.StatusCode // h.Authorize closes resp
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, s.explain(ctx, status, err)
	}
	if kept == nil {
		return nil, nil // the SDK found nothing to sign in for (it passes over such 403s too)
	}
	fmt.Fprintf(s.stderr, "elicit: signed in to %s\n", s.server)
	return kept, nil
}

// heldScopes returns the scopes of the sign-in held now, if any.
func (s *signIn) heldScopes() []string {
	s.mu.Lock()
	ts := s.ts
	s.mu.Unlock()
	kept, ok := ts.(*keptTokens)
	if !ok {
		return nil
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	return slices.Clone(kept.record.Scopes)
}

// widenScope makes a 403 insufficient_scope challenge (resp's) ask for the scopes held as
// well as those it names: stepping up to a wider scope must not lose what the token could do
// (the union, SEP-2350). The SDK asks for the challenge's scope. A sign-in that fails is
// final for the run (Authorize), and the transport tries each request again once: stepping
// up cannot loop.
func widenScope(resp *http.Response, held []string) {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(held) == 0 {
		return
	}
	for _, c := range challenges {
		if c.Scheme != "bearer" || c.Params["error"] != "insufficient_scope" {
			continue
		}
		scopes := slices.Clone(held)
		for _, sc := range strings.Fields(c.Params["scope"]) {
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
		params := []string{`error="insufficient_scope"`, `scope=` + quoteParam(strings.Join(scopes, " "))}
		for _, k := range slices.Sorted(maps.Keys(c.Params)) {
			if k != "error" && k != "scope" {
				params = append(params, k+"="+quoteParam(c.Params[k]))
			}
		}
		resp.Header.Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
		return
	}
}

// quoteParam is v as an auth-param's quoted-string (RFC 9110 section 5.6.4).
func quoteParam(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// insufficientScope reports whether resp asks for more scopes than the token has (RFC 6750
// section 3.1): a sign-in asking for them may help.
func insufficientScope(resp *http.Response) bool {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// findMetadata checks that the server says where to sign in: protected resource metadata
// (RFC 9728) at the URL its WWW-Authenticate header names, or at one of the well-known
// URLs for --url (u, s.server parsed). Without it, elicit could only guess, so it says so
// instead.
func (s *signIn) findMetadata(ctx context.Context, u *url.URL, resp *http.Response) error {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return &signInError{server: s.server, status: resp.StatusCode, reason: fmt.Sprintf("its WWW-Authenticate header cannot be read (%v)", err)}
	}
	type candidate struct{ metadata, resource string }
	var candidates []candidate
	for _, c := range challenges {
		if m := c.Params["resource_metadata"]; m != "" {
			candidates = append(candidates, candidate{m, s.server})
			break
		}
	}
	atPath, atRoot := *u, *u
	atPath.Path, atPath.RawPath = "/.well-known/oauth-protected-resource/"+strings.TrimLeft(u.Path, "/"), ""
	atRoot.Path, atRoot.RawPath = "/.well-known/oauth-protected-resource", ""
	root := *u
	root.Path, root.RawPath = "", ""
	candidates = append(candidates, candidate{atPath.String(), s.server}, candidate{atRoot.String(), root.String()})
	var tried []string
	for _, c := range candidates {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.metadata, c.resource, s.httpClient)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && strings.HasSuffix(err.Error(), "bad status 404"): // the SDK's words
			tried = append(tried, c.metadata+" (not found)")
		case err != nil:
			tried = append(tried, fmt.Sprintf("%s (%v)", c.metadata, err))
		case len(prm.AuthorizationServers) == 0:
			return &signInError{server: s.server, status: resp.StatusCode,
				reason: fmt.Sprintf("its protected resource metadata at %s names no authorization server", c.metadata)}
		default:
			return nil
		}
	}
	return &signInError{server: s.server, status: resp.StatusCode,
		reason: "it publishes no OAuth protected resource metadata (RFC 9728) to say where to sign in; tried " + strings.Join(tried, ", "),
		hint:   fmt.Sprintf("if you have a token for it, put it in a file and give --token-file FILE, or set $%s", tokenEnv)}
}

// explain turns a failed sign-in into words for the person: the ways it ends that elicit
// itself caused (cancelled, timed out, refused through the browser) are already errors of
// elicit's own; an authorization server's refusal to register elicit or to issue a token
// is said with its error code and description.
func (s *signIn) explain(ctx context.Context, status int, err error) error {
	var (
		mine       interface{ signInFailure() }
		noToken    *oauth2.RetrieveError
		noRegister *oauthex.ClientRegistrationError
	)
	switch {
	case errors.As(err, &mine):
		return err
	case ctx.Err() != nil:
		return &signInCancelledError{cause: ctx.Err()}
	case errors.As(err, &noToken) && noToken.ErrorCode != "":
		return &signInError{server: s.server, status: status, cause: err,
			reason: "the authorization server refused to issue a token " + oauthWords(noToken.ErrorCode, noToken.ErrorDescription)}
	case errors.As(err, &noRegister):
		return &signInError{server: s.server, status: status, cause: err,
			reason: "the authorization server refused to register elicit " + oauthWords(noRegister.ErrorCode, noRegister.ErrorDescription)}
	}
	return &signInError{server: s.server, status: status, reason: "signing in failed: " + err.Error(), cause: err}
}

// oauthWords is an OAuth error response, as "(code: description)".
func oauthWords(code, description string) string {
	if description == "" {
		return "(" + code + ")"
	}
	return "(" + code + ": " + description + ")"
}

// fetchCode is the browser step: it shows the person the authorization link (opening it,
// unless --no-open), and waits for the browser to come back to the loopback listener ln
// with the authorization code, the authorization server's refusal, ctx's end (Ctrl-C), or
// --sign-in-timeout.
func (s *signIn) fetchCode(ctx context.Context, ln net.Listener, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	link, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("the authorization link is not a URL: %w", err)
	}
	came := make(chan callback, 1)
	srv := &http.Server{
		Handler:           &callbackHandler{state: link.Query().Get("state"), came: came},
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		// Let the page that says how the sign-in went reach the browser, then stop.
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(shut) != nil {
			_ = srv.Close()
		}
		<-served
	}()

	fmt.Fprintf(s.stderr, "%s wants you to sign in.\n", s.server)
	opened := false
	if s.open {
		if err := s.browse(args.URL); err != nil {
			fmt.Fprintf(s.stderr, "elicit: could not open a browser (%v)\n", err)
		} else {
			opened = true
		}
	}
	if opened {
		fmt.Fprintf(s.stderr, "Opened your browser to sign in. If it did not open, open this link:\n%s\n", args.URL)
	} else {
		fmt.Fprintf(s.stderr, "Open this link in your browser to sign in:\n%s\n", args.URL)
	}
	fmt.Fprintf(s.stderr, "waiting up to %s for the sign-in (Ctrl-C cancels)\n", s.wait)

	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	select {
	case cb := <-came:
		if cb.refused != nil {
			return nil, cb.refused
		}
		return &cb.result, nil
	case <-ctx.Done():
		return nil, &signInCancelledError{cause: ctx.Err()}
	case <-timer.C:
		return nil, &signInTimeoutError{wait: s.wait}
	}
}

// callback is what the browser brought back: a code, or the authorization server's refusal.
type callback struct {
	result  auth.AuthorizationResult
	refused *signInRefusedError
}

// callbackHandler serves the loopback redirect: the first request that carries the
// sign-in's state ends the browser step; any other is turned away, so that a stray
// request cannot end it.
type callbackHandler struct {
	state string
	came  chan<- callback // buffered, 1
	once  sync.Once
}

func (h *callbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.URL.Path != "/callback" || q.Get("state") != h.state {
		http.Error(w, "This is elicit's sign-in callback; it expected another request.", http.StatusBadRequest)
		return
	}
	var cb callback
	page := "You are signed in. You can close this tab and go back to the terminal."
	if code := q.Get("error"); code != "" {
		cb.refused = &signInRefusedError{code: code, description: q.Get("error_description")}
		page = "Sign-in refused: " + cb.refused.Error() + ". You can close this tab."
	} else if q.Get("code") == "" {
		http.Error(w, "The sign-in callback carries neither a code nor an error.", http.StatusBadRequest)
		return
	} else {
		cb.result = auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>elicit</title><p>%s</p>\n", html.EscapeString(page))
	h.once.Do(func() { h.came <- cb })
}

// signInError says why elicit could not sign in to a server that asked it to.
type signInError struct {
	server string
	status int    // the server's answer: 401 or 403
	reason string // why, for a person
	hint   string // what to do, or ""
	cause  error  // the underlying failure (the reason has said it), or nil
}

func (e *signInError) signInFailure() {}

func (e *signInError) Error() string {
	msg := fmt.Sprintf("%s asks elicit to sign in (%d %s), but %s", e.server, e.status, http.StatusText(e.status), e.reason)
	if e.hint != "" {
		msg += "; " + e.hint
	}
	return msg
}

func (e *signInError) Unwrap() error { return e.cause }

// signInRefusedError is the authorization server's refusal, sent back through the browser
// (RFC 6749 section 4.1.2.1): the person said no, or the server would not let them in.
type signInRefusedError struct{ code, description string }

func (e *signInRefusedError) signInFailure() {}

func (e *signInRefusedError) Error() string {
	return "the authorization server refused the sign-in " + oauthWords(e.code, e.description)
}

// signInTimeoutError is a browser step that did not finish within --sign-in-timeout.
type signInTimeoutError struct{ wait time.Duration }

func (e *signInTimeoutError) signInFailure() {}

func (e *signInTimeoutError) Error() string {
	return fmt.Sprintf("gave up waiting for the sign-in: the browser did not come back to elicit within %s (--sign-in-timeout); run elicit again to sign in", e.wait)
}

// signInCancelledError is a sign-in ended by Ctrl-C, or by --timeout.
type signInCancelledError struct{ cause error }

func (e *signInCancelledError) signInFailure() {}

func (e *signInCancelledError) Error() string {
	if errors.Is(e.cause, context.DeadlineExceeded) {
		return "sign-in cancelled: --timeout passed"
	}
	return "sign-in cancelled"
}

func (e *signInCancelledError) Unwrap() error { return e.cause }
