package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/oauth"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/store"
)

// httpConfig is the Streamable HTTP listener's settings.
type httpConfig struct {
	addr    string   // host:port to listen on; "" serves stdio
	tokens  []string // bearer tokens, each a caller of its own; none: no token asked
	origins []string // browser origins allowed besides the server's own

	sessionIdle  time.Duration // a session whose client sends nothing this long ends
	drainWait    time.Duration // after SIGTERM, how long /readyz says 503 before calls are refused
	maxSessions  int           // live sessions in all
	maxPerCaller int           // live sessions of one caller

	// OAuth (issue #41): with issuers set, every MCP request needs a token from one of them
	// (or a static token), for publicURL, with every scope in scopes.
	publicURL              string   // the MCP endpoint as clients reach it: the resource
	issuers                []string // trusted authorization servers
	scopes                 []string // required of every OAuth token
	clientID, clientSecret string   // introspection's client credentials (environment only)
	verifier               *oauth.Verifier
}

// errNeedsToken is the refusal to listen beyond loopback without a bearer token.
var errNeedsToken = errors.New("--http on a non-loopback address needs bearer tokens (ELICITD_HTTP_TOKEN) or OAuth (--auth-issuer): " +
	"anyone who can reach the port could otherwise call the tools and read what people answered")

// check refuses an address that is not host:port, and a non-loopback one without a token.
func (hc httpConfig) check() error {
	if hc.addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(hc.addr)
	if err != nil {
		return fmt.Errorf("--http must be host:port (127.0.0.1:8080, say), got %q", hc.addr)
	}
	if !loopbackHost(host) && len(hc.tokens) == 0 && len(hc.issuers) == 0 {
		return errNeedsToken
	}
	return nil
}

// checkOAuth refuses OAuth settings that do not go together, and makes the verifier.
func (hc *httpConfig) checkOAuth() error {
	switch {
	case len(hc.issuers) == 0 && hc.publicURL != "":
		return errors.New("--public-url is the resource OAuth tokens are for: it needs --auth-issuer")
	case len(hc.issuers) == 0 && len(hc.scopes) > 0:
		return errors.New("--auth-scope needs --auth-issuer: scopes are checked on OAuth tokens")
	case len(hc.issuers) == 0:
		return nil
	case hc.addr == "":
		return errors.New("--auth-issuer needs --http: on stdio there is no token to check")
	case hc.publicURL == "":
		return errors.New("--auth-issuer needs --public-url, the MCP endpoint's URL as clients reach it (https://elicitd.example.com/mcp): every token must be for it")
	case (hc.clientID == "") != (hc.clientSecret == ""):
		return errors.New("ELICITD_AUTH_CLIENT_ID and ELICITD_AUTH_CLIENT_SECRET go together: set both (introspection of opaque tokens) or neither")
	}
	v, err := oauth.New(oauth.Config{Resource: hc.publicURL, Issuers: hc.issuers, ClientID: hc.clientID, ClientSecret: hc.clientSecret})
	if err != nil {
		return fmt.Errorf("--auth-issuer: %w", err)
	}
	hc.verifier = v
	return nil
}

// loopbackHost reports whether host (a name or an address, without port) is this machine
// only: oauth's test, which also lets an issuer or --public-url be http on loopback.
var loopbackHost = oauth.LoopbackHost

// httpHandler serves s over Streamable HTTP: clients of 2025-11-25 and earlier get a session
// (push elicitation over its stream), 2026-07-28 clients are served statelessly (pull
// elicitation; any request may come on any connection). In front: the Host and Origin
// checks against DNS rebinding, then the bearer token when one is set.
func (s *server) httpHandler(hc httpConfig, caps *sessionCaps, log *slog.Logger) http.Handler {
	get := func(*http.Request) *mcp.Server { return s.mcp }
	// A call whose response stream drops ends its questions client_gone: no one can receive
	// their answers (there is no EventStore, so a push-era stream cannot be resumed either).
	s.mcp.AddReceivingMiddleware(caps.middleware)
	stateful := s.el.WatchStreams(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: log, SessionTimeout: hc.sessionIdle}))
	// A 2026-07-28 request gets its one message as a plain JSON body: nothing else goes out
	// on it (its questions are in its result; progress is sent only in the push era), and an
	// SSE stream would cost both sides its framing, a flush and the client's stream reader
	// on every round (14% more calls a second at one caller, 11% less server CPU).
	stateless := s.el.WatchStreams(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: log, Stateless: true, JSONResponse: true}))
	if owner := s.opts.Owner; s.tasks != nil && owner != nil {
		// A task's poll, the request a waiting client sends most, is read and answered
		// before go-sdk's handler when there is nothing else to do (tasks.Server.Polls),
		// for the owner the same hook names: a stateless request has no session.
		stateless = s.tasks.Polls(stateless, s.impl, func(r *http.Request) string {
			return owner(&mcp.CallToolRequest{Extra: &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}})
		})
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
			// The client ends its session: its questions end now, so the calls waiting on
			// them return and the SDK, which closes a session once its calls have
			// returned, can answer the DELETE.
			user := ""
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
				user = ti.UserID
			}
			s.el.EndSession(id, user)
		}
		if r.Header.Get("Mcp-Protocol-Version") >= ask.PullEra {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	if len(hc.tokens) > 0 || hc.verifier != nil {
		h = bearerAuth(hc, log, h)
	}
	h = originCheck(hc.origins, h)
	if s.pages == nil && hc.verifier == nil {
		return h
	}
	mux := http.NewServeMux()
	if s.pages != nil {
		// elicitd's page is for a person's browser: it has no token; its link is the key.
		mux.Handle(page.Path, s.pages)
	}
	if hc.verifier != nil {
		// RFC 9728: where a client that got a 401 finds the authorization servers.
		mux.Handle(oauth.MetadataPath(hc.publicURL), auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: hc.publicURL, AuthorizationServers: hc.issuers, ScopesSupported: hc.scopes,
			BearerMethodsSupported: []string{"header"}, ResourceName: "elicitd",
		}))
	}
	mux.Handle("/", h)
	return mux
}

// staticCaller returns the caller a configured static token names, by its place in the
// list, never by the token itself; nil when token is none of them.
func staticCaller(tokens []string, token string) *auth.TokenInfo {
	found := -1
	for i, t := range tokens {
		// Every token is compared, so the time taken says nothing of which matched.
		if subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil
	}
	return &auth.TokenInfo{UserID: "token-" + strconv.Itoa(found+1)}
}

// oauthCaller is the caller an OAuth token names: its issuer and subject, as a JSON pair
// after "oauth:", so that no two (issuer, subject) pairs, and no static token's caller
// ("token-N"), share a name.
func oauthCaller(c *oauth.Claims) *auth.TokenInfo {
	pair, _ := json.Marshal([2]string{c.Issuer, c.Subject})
	return &auth.TokenInfo{UserID: "oauth:" + string(pair), Scopes: c.Scopes, Expiration: c.Expiry}
}

// verifiedKey carries the TokenInfo bearerAuth established to the SDK's middleware.
type verifiedKey struct{}

// bearerAuth lets through an MCP request that brings a valid bearer token in its
// Authorization header: a static token (ELICITD_HTTP_TOKEN), or an OAuth access token that
// hc.verifier accepts and that has every scope of hc.scopes. It refuses, as RFC 6750 and
// RFC 9728 say, with a WWW-Authenticate challenge naming the resource metadata:
//   - no token: 401, no error code;
//   - a token in the query string: 401 invalid_request (it would be in logs);
//   - a token not accepted: 401 invalid_token, with the reason (never the token);
//   - a token without a required scope: 403 insufficient_scope, with the scopes needed;
//   - the issuer unreachable and no keys held: 503 with Retry-After.
//
// The caller's TokenInfo goes on through go-sdk's auth.RequireBearerToken, where the MCP
// handler finds it (and ties a session to its user). Why an OAuth token was refused is
// logged at debug level (a misconfigured audience shows there), an unreachable issuer as a
// warning; never the token.
func bearerAuth(hc httpConfig, log *slog.Logger, next http.Handler) http.Handler {
	base := oauth.Challenge{Scope: strings.Join(hc.scopes, " ")}
	if hc.publicURL != "" {
		base.ResourceMetadata = oauth.MetadataURL(hc.publicURL)
	}
	inner := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		if ti, ok := r.Context().Value(verifiedKey{}).(*auth.TokenInfo); ok {
			return ti, nil
		}
		return nil, auth.ErrInvalidToken
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: oauth.DefaultLeeway})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(status int, errCode, why string) {
			c := base
			c.Error, c.Description = errCode, why
			if status != http.StatusServiceUnavailable {
				w.Header().Set("WWW-Authenticate", c.String())
			}
			http.Error(w, why, status)
		}
		if r.URL.RawQuery != "" && r.URL.Query().Has("access_token") { // parsed only when there is one
			refuse(http.StatusUnauthorized, oauth.ErrorInvalidRequest, "a bearer token goes in the Authorization header, never in the URL")
			return
		}
		header := r.Header.Get("Authorization")
		if header == "" {
			refuse(http.StatusUnauthorized, "", "this MCP endpoint needs a bearer token (Authorization: Bearer ...)")
			return
		}
		scheme, token, ok := strings.Cut(header, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			refuse(http.StatusUnauthorized, oauth.ErrorInvalidRequest, "the Authorization header must be: Bearer TOKEN")
			return
		}
		token = strings.TrimSpace(token)
		ti := staticCaller(hc.tokens, token)
		if ti == nil && hc.verifier == nil {
			refuse(http.StatusUnauthorized, oauth.ErrorInvalidToken, "the bearer token is not one elicitd was given")
			return
		}
		if ti == nil {
			claims, err := hc.verifier.Verify(r.Context(), token)
			if errors.Is(err, oauth.ErrUnavailable) {
				log.Warn("an OAuth token could not be checked", "error", err.Error())
				w.Header().Set("Retry-After", "5")
				refuse(http.StatusServiceUnavailable, "", "the token cannot be checked now: its authorization server cannot be reached")
				return
			}
			if err != nil {
				log.Debug("an OAuth token was refused", "error", err.Error())
				refuse(http.StatusUnauthorized, oauth.ErrorInvalidToken, err.Error())
				return
			}
			if missing := claims.Missing(hc.scopes); len(missing) > 0 {
				refuse(http.StatusForbidden, oauth.ErrorInsufficientScope, "the token lacks the scope "+strings.Join(missing, " "))
				return
			}
			ti = oauthCaller(claims)
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, ti)))
	})
}

// originCheck refuses, with 403, a request whose Origin (sent by browsers) is neither the
// server's own origin nor one allowed. (A DNS-rebound Host on a loopback address is go-sdk's
// handler's to refuse, which it does unless told not to.)
func originCheck(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !slices.Contains(allowed, o) {
			u, err := url.Parse(o)
			if err != nil || !strings.EqualFold(u.Host, r.Host) {
				http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed (ELICITD_HTTP_ORIGINS lists the allowed ones)", o), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// probes answers a load balancer's checks on the listener, in front of every other check
// (no token, no Origin: they tell nothing but whether this node serves): GET /healthz is
// 200 while the process serves; GET /readyz is 200 until a signal asks the node to stop
// (stopping set), and 503 from that moment, before the node refuses calls; 503 too while
// the store cannot be reached (st, when it can tell: a NATS connection down, or silent for
// a few seconds), since every call the node took would then fail. Any other request, and
// any other method on these paths, goes on to next.
func probes(stopping *atomic.Bool, st store.Store, next http.Handler) http.Handler {
	health, _ := st.(store.HealthChecker)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead || r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/readyz" && stopping.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "stopping\n")
			return
		}
		if r.URL.Path == "/readyz" && health != nil && health.Healthy() != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "store unavailable\n")
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
}

// callerOwner owns questions over HTTP: a client with a session (2025-11-25 and earlier)
// owns its questions by that session (""), as on stdio; a stateless 2026-07-28 request by
// its caller: the static bearer token it brought, the issuer and subject of its OAuth
// token, or, on loopback with neither tokens nor issuers set, the local user.
func callerOwner(req *mcp.CallToolRequest) string {
	if req.Session != nil && req.Session.ID() != "" {
		return ""
	}
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		return "caller:" + req.Extra.TokenInfo.UserID
	}
	return "caller:local"
}

// serveHTTP runs s on ln until ctx ends (a signal). Then /readyz answers 503 at once; after
// hc.drainWait (a load balancer's time to see it), the node refuses new calls (2026-07-28
// requests hear SERVER_STOPPING, their questions left open in the store for another node),
// ends every open push-era question with reason shutdown, so the waiting calls get their
// results, and stops the listener.
// caps counts the sessions; stopping is set as /readyz starts answering 503 (the metrics
// listener's probes read it too).
func serveHTTP(ctx context.Context, s *server, ln net.Listener, hc httpConfig, cl connLimits, caps *sessionCaps, stopping *atomic.Bool, log *slog.Logger) error {
	hs := cl.server(probes(stopping, s.opts.Store, s.httpHandler(hc, caps, log)), log)
	reclaimCtx, stopReclaim := context.WithCancel(ctx)
	defer stopReclaim()
	go caps.reclaim(reclaimCtx, 10*time.Second)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("serving MCP over Streamable HTTP", "address", ln.Addr().String())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopping.Store(true)
	if hc.drainWait > 0 {
		log.Info("stopping: /readyz answers 503; serving on meanwhile", "drain_wait", hc.drainWait.String())
		select {
		case err := <-served:
			return err
		case <-time.After(hc.drainWait):
		}
	}
	log.Info("shutting down")
	closeCtx, cancel := context.WithTimeout(context.Background(), shutdownWithin)
	defer cancel()
	if err := s.close(closeCtx, elicitation.Shutdown); err != nil {
		log.Warn("shutdown did not finish in time", "error", err)
	}
	// The answered calls have written their responses; a moment for idle connections to
	// close, then open streams (a client's GET) are cut.
	grace, stop := context.WithTimeout(closeCtx, 200*time.Millisecond)
	defer stop()
	if err := hs.Shutdown(grace); err != nil {
		_ = hs.Close()
	}
	<-served
	return nil
}
