package main

import (
	"context"
	"crypto/subtle"
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

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
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
}

// errNeedsToken is the refusal to listen beyond loopback without a bearer token.
var errNeedsToken = errors.New("--http on a non-loopback address needs a bearer token (ELICITD_HTTP_TOKEN): " +
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
	if !loopbackHost(host) && len(hc.tokens) == 0 {
		return errNeedsToken
	}
	return nil
}

// loopbackHost reports whether host (a name or an address, without port) is this machine
// only. An empty host listens on every interface, which is not.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

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
	stateless := s.el.WatchStreams(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: log, Stateless: true}))
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
	if len(hc.tokens) > 0 {
		h = auth.RequireBearerToken(tokenVerifier(hc.tokens), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	h = originCheck(hc.origins, h)
	if s.pages == nil {
		return h
	}
	// elicitd's page is for a person's browser: it has no token; its link is the key.
	mux := http.NewServeMux()
	mux.Handle(page.Path, s.pages)
	mux.Handle("/", h)
	return mux
}

// tokenVerifier accepts the configured tokens; the caller is named by the token's place in
// the list, never by the token itself.
func tokenVerifier(tokens []string) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		found := -1
		for i, t := range tokens {
			// Every token is compared, so the time taken says nothing of which matched.
			if subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 {
				found = i
			}
		}
		if found < 0 {
			return nil, fmt.Errorf("%w: the bearer token is not one elicitd was given", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: "token-" + strconv.Itoa(found+1)}, nil
	}
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
// its caller, the bearer token it brought, or on loopback without tokens the local user.
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
