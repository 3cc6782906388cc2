package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an HTTP client can make elicitd hold. A session (2025-11-25 and earlier) ends when
// its client has sent nothing for --session-idle (go-sdk's SessionTimeout, which does not
// count a session whose request is still being answered, as a call waiting on a person is);
// its open questions then end client_gone. Live sessions are capped per caller and in all;
// an initialize over a cap gets a JSON-RPC error that says which. Connections idle between
// requests are closed after --conn-idle, and a request's body must arrive within
// --body-timeout, which stops counting once the body is read, so a long-lived response (an
// SSE stream, a call that waits minutes for a person) is never cut.

// CodeTooManySessions is the JSON-RPC error code of an initialize refused by a session cap.
const CodeTooManySessions = -32001

// sessionCaps counts the live sessions of each caller.
type sessionCaps struct {
	perCaller, total int
	log              *slog.Logger

	mu    sync.Mutex
	live  map[string]int // by caller
	all   int
	ended int // since reclaim last looked
	// initializes refused, by the cap they would pass: per caller, in all
	refusedCaller, refusedAll uint64
}

// reclaimAfter is how many sessions must have ended since reclaim last looked for it to hand
// their memory back to the system.
const reclaimAfter = 256

// reclaim looks every period, until ctx ends, whether many sessions have ended (abandoned
// ones reaching --session-idle, say), and if so returns the memory they held to the system
// at once: an idle process would otherwise collect only every two minutes and give memory
// back over many more.
func (sc *sessionCaps) reclaim(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sc.mu.Lock()
		n := sc.ended
		if n >= reclaimAfter {
			sc.ended = 0
		}
		sc.mu.Unlock()
		if n >= reclaimAfter {
			debug.FreeOSMemory()
			sc.log.Debug("memory of ended sessions returned", "sessions", n)
		}
	}
}

func newSessionCaps(perCaller, total int, log *slog.Logger) *sessionCaps {
	return &sessionCaps{perCaller: perCaller, total: total, log: log, live: map[string]int{}}
}

// middleware refuses the initialize of a session over a cap, and counts the session until it
// ends. Stateless requests (2026-07-28) have no session and are not counted.
func (sc *sessionCaps) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method != "initialize" || !ok || ss.ID() == "" {
			return next(ctx, method, req)
		}
		caller := ""
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			caller = ex.TokenInfo.UserID
		}
		if err := sc.admit(caller); err != nil {
			sc.log.Info("HTTP session refused", "caller", caller, "error", err.Error())
			return nil, err // the session is never initialised, and go-sdk closes it
		}
		go func() {
			_ = ss.Wait()
			sc.release(caller)
			sc.log.Debug("HTTP session ended", "session", ss.ID())
		}()
		return next(ctx, method, req)
	}
}

// admit counts a new session of caller, or says which cap it would pass.
func (sc *sessionCaps) admit(caller string) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.live[caller] >= sc.perCaller:
		sc.refusedCaller++
		return &jsonrpc.Error{Code: CodeTooManySessions, Message: fmt.Sprintf(
			"too many sessions: this caller has %d open, the most it may (--max-sessions-per-caller); close one (DELETE) or reuse it, or wait for idle ones to end (--session-idle)", sc.live[caller])}
	case sc.all >= sc.total:
		sc.refusedAll++
		return &jsonrpc.Error{Code: CodeTooManySessions, Message: fmt.Sprintf(
			"too many sessions: the server has %d open, the most it may (--max-sessions); retry later", sc.all)}
	}
	sc.live[caller]++
	sc.all++
	return nil
}

// counts returns the live sessions, and the initializes refused by each cap so far.
func (sc *sessionCaps) counts() (open int, refusedCaller, refusedAll uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.all, sc.refusedCaller, sc.refusedAll
}

func (sc *sessionCaps) release(caller string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.all--
	sc.ended++
	if sc.live[caller]--; sc.live[caller] <= 0 {
		delete(sc.live, caller)
	}
}

// connLimits are what an HTTP listener allows a connection: both the MCP listener and the
// page's have them.
type connLimits struct {
	idle time.Duration // a keep-alive connection idle this long between requests is closed
	body time.Duration // the most a request may take to send its body
}

// server returns an http.Server for h with these limits.
func (cl connLimits) server(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: bodyDeadline(cl.body, h), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cl.idle,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// bodyDeadline bounds how a request with a body sends it: the body may pause for at most d
// between reads, and must arrive whole within bodyWhole times d. A person uploading a large
// file over a slow link is not cut off while bytes keep coming; a client that trickles a body,
// or stops sending it, is. Once the body has been read the deadline is cleared, so a response
// that lasts (an SSE stream, a call that waits for a person) is never cut. A request without
// a body gets no deadline: its headers were read under ReadHeaderTimeout.
func bodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d <= 0 || r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		now := time.Now()
		b := &deadlineBody{ReadCloser: r.Body, rc: rc, pause: d, whole: now.Add(bodyWhole * d)}
		if b.extend(now) == nil {
			r.Body = b
		}
		next.ServeHTTP(w, r)
	})
}

// bodyWhole is how many times --body-timeout a whole body may take to arrive.
const bodyWhole = 10

// deadlineBody moves the read deadline on as the body arrives, and clears it once the body
// has been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	pause time.Duration // the longest the body may pause
	whole time.Time     // by when it must have arrived
	done  bool
}

// extend sets the deadline to now plus the pause allowed, but never past whole.
func (b *deadlineBody) extend(now time.Time) error {
	at := now.Add(b.pause)
	if at.After(b.whole) {
		at = b.whole
	}
	return b.rc.SetReadDeadline(at)
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.done:
	case err == io.EOF:
		// Only once it is whole: a body cut short keeps the deadline, so the server's
		// attempt to drain it before replying fails at once too.
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case n > 0:
		_ = b.extend(time.Now()) // bytes came: the pause allowed starts again
	}
	return n, err
}
