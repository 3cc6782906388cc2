package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a strings.Builder safe to write from one goroutine and read from another.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// browserStep is the browser step of one sign-in, run by fetchCode on a loopback listener
// of its own, with the link the browser was sent (or shown).
type browserStep struct {
	s      *signIn
	ln     net.Listener
	link   string // the authorization link, whose state the callback must carry
	stderr *syncBuffer
	opened chan string // links handed to the browser
	done   chan struct{}
	res    *auth.AuthorizationResult
	err    error
}

func startBrowserStep(t *testing.T, ctx context.Context, open bool, wait time.Duration) *browserStep {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &browserStep{ln: ln, stderr: &syncBuffer{}, opened: make(chan string, 1), done: make(chan struct{})}
	b.link = "https://as.example.com/authorize?" + url.Values{
		"state": {"state-0123"}, "redirect_uri": {"http://" + ln.Addr().String() + "/callback"}}.Encode()
	b.s = &signIn{server: "https://mcp.example.com/mcp", open: open, wait: wait, stderr: b.stderr,
		browse: func(link string) error { b.opened <- link; return nil }}
	go func() {
		defer close(b.done)
		b.res, b.err = b.s.fetchCode(ctx, ln, &auth.AuthorizationArgs{URL: b.link})
	}()
	t.Cleanup(func() { <-b.done })
	return b
}

// come is the browser coming back to elicit with query.
func (b *browserStep) come(t *testing.T, query url.Values) (int, string) {
	t.Helper()
	res, err := http.Get("http://" + b.ln.Addr().String() + "/callback?" + query.Encode())
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(body)
}

// The browser step opens the link and ends when the browser comes back with the sign-in's
// state; a request without it cannot end it.
func TestSignInBrowserStepTakesTheCodeWithItsState(t *testing.T) {
	b := startBrowserStep(t, context.Background(), true, time.Minute)
	assert.Equal(t, b.link, <-b.opened, "the browser is sent the authorization link")

	status, _ := b.come(t, url.Values{"state": {"another"}, "code": {"stray-code"}})
	assert.Equal(t, http.StatusBadRequest, status, "a stray request is turned away")
	status, page := b.come(t, url.Values{"state": {"state-0123"}, "code": {"code-0123"}, "iss": {"https://as.example.com"}})
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, "You are signed in")
	<-b.done
	require.NoError(t, b.err)
	assert.Equal(t, &auth.AuthorizationResult{Code: "code-0123", State: "state-0123", Iss: "https://as.example.com"}, b.res)
	assert.Contains(t, b.stderr.String(), "https://mcp.example.com/mcp wants you to sign in.\nOpened your browser to sign in. If it did not open, open this link:\n"+b.link+"\n")
	assert.NotContains(t, b.stderr.String(), "code-0123", "the code is never shown")
}

// With --no-open the link is shown on stderr and no browser is started.
func TestSignInNoOpenShowsTheLink(t *testing.T) {
	b := startBrowserStep(t, context.Background(), false, time.Minute)
	b.come(t, url.Values{"state": {"state-0123"}, "code": {"code-0123"}})
	<-b.done
	require.NoError(t, b.err)
	assert.Empty(t, b.opened, "no browser")
	assert.Contains(t, b.stderr.String(), "Open this link in your browser to sign in:\n"+b.link+"\n")
	assert.Contains(t, b.stderr.String(), "waiting up to 1m0s for the sign-in (Ctrl-C cancels)")
}

// The authorization server's refusal comes back through the browser and is said in words.
func TestSignInRefusedByTheAuthorizationServer(t *testing.T) {
	b := startBrowserStep(t, context.Background(), false, time.Minute)
	status, page := b.come(t, url.Values{"state": {"state-0123"}, "error": {"access_denied"}, "error_description": {"the user said <no>"}})
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, "Sign-in refused: the authorization server refused the sign-in (access_denied: the user said &lt;no&gt;)")
	<-b.done
	var refused *signInRefusedError
	require.ErrorAs(t, b.err, &refused)
	assert.Equal(t, "the authorization server refused the sign-in (access_denied: the user said <no>)", b.err.Error())
}

// A person who never finishes signing in is waited for --sign-in-timeout, no longer; Ctrl-C
// ends the wait at once.
func TestSignInWaitIsBoundedAndCancellable(t *testing.T) {
	b := startBrowserStep(t, context.Background(), false, 50*time.Millisecond)
	<-b.done
	var late *signInTimeoutError
	require.ErrorAs(t, b.err, &late)
	assert.Equal(t, "gave up waiting for the sign-in: the browser did not come back to elicit within 50ms (--sign-in-timeout); run elicit again to sign in", b.err.Error())

	ctx, cancel := context.WithCancel(context.Background())
	b = startBrowserStep(t, ctx, false, time.Hour)
	cancel()
	<-b.done
	var cancelled *signInCancelledError
	require.ErrorAs(t, b.err, &cancelled)
	assert.ErrorIs(t, b.err, context.Canceled)
	assert.Equal(t, "sign-in cancelled", b.err.Error())
}

// unauthorized is a server's 401, with the WWW-Authenticate header given.
func unauthorized(t *testing.T, server string, challenge string) (*http.Request, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, server, nil)
	require.NoError(t, err)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(""))}
	if challenge != "" {
		resp.Header.Set("WWW-Authenticate", challenge)
	}
	return req, resp
}

// A server that asks for a sign-in but does not say where (no RFC 9728 metadata), or says
// so over plain http to another machine, is refused in words, without a browser.
func TestSignInNeedsTheServersMetadata(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/meta-without-as", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"resource": "http://`+r.Host+`/mcp"}`)
	})
	srv := httptest.NewServer(mux) // every other path: 404
	defer srv.Close()
	server := srv.URL + "/mcp"
	var stderr syncBuffer
	s := newSignIn(server, &signIns{dir: t.TempDir()}, &stderr)
	s.browse = func(string) error { t.Error("no browser without metadata"); return nil }

	req, resp := unauthorized(t, server, `Bearer realm="mcp"`)
	err := s.Authorize(context.Background(), req, resp)
	var e *signInError
	require.ErrorAs(t, err, &e)
	assert.Contains(t, err.Error(), server+" asks elicit to sign in (401 Unauthorized), but it publishes no OAuth protected resource metadata (RFC 9728) to say where to sign in; tried "+
		srv.URL+"/.well-known/oauth-protected-resource/mcp (not found), "+srv.URL+"/.well-known/oauth-protected-resource (not found)")
	assert.Contains(t, err.Error(), "put it in a file and give --token-file FILE, or set $ELICIT_TOKEN")
	assert.Equal(t, err, s.failure(), "kept, to explain the failed connection")

	req, resp = unauthorized(t, server, `Bearer realm="mcp"`)
	assert.Same(t, err, s.Authorize(context.Background(), req, resp), "a failed sign-in is final for the run")

	s = newSignIn(server, &signIns{dir: t.TempDir()}, &stderr)
	req, resp = unauthorized(t, server, `Bearer resource_metadata="`+srv.URL+`/meta-without-as"`)
	err = s.Authorize(context.Background(), req, resp)
	assert.ErrorContains(t, err, "its protected resource metadata at "+srv.URL+"/meta-without-as names no authorization server")

	forbidden := newSignIn(server, &signIns{dir: t.TempDir()}, &stderr)
	req, resp = unauthorized(t, server, `Bearer error="invalid_token"`)
	resp.StatusCode = http.StatusForbidden
	require.NoError(t, forbidden.Authorize(context.Background(), req, resp), "a 403 no sign-in can change: the request is tried again, and its 403 reported")
	assert.NoError(t, forbidden.failure())
	ts, err := forbidden.TokenSource(context.Background())
	require.NoError(t, err)
	assert.Nil(t, ts, "no sign-in happened")
	req, resp = unauthorized(t, server, `Bearer error="insufficient_scope", scope="elicitd:admin"`)
	resp.StatusCode = http.StatusForbidden
	assert.ErrorContains(t, forbidden.Authorize(context.Background(), req, resp), "asks elicit to sign in (403 Forbidden), but it publishes no OAuth protected resource metadata",
		"a 403 asking for more scopes is signed in for")

	far := newSignIn("http://mcp.example.com/mcp", &signIns{dir: t.TempDir()}, &stderr)
	req, resp = unauthorized(t, far.server, "")
	err = far.Authorize(context.Background(), req, resp)
	assert.EqualError(t, err, "http://mcp.example.com/mcp asks elicit to sign in (401 Unauthorized), but it is plain http to another machine, and elicit signs in only over https, or http to this machine")
	assert.Empty(t, stderr.String())
}

func TestParseSignInFlags(t *testing.T) {
	inv, err := parse([]string{"--url", "https://mcp.example.com/mcp", "--no-open", "--sign-in-timeout", "90s",
		"--client-id-url", "https://example.com/elicit.json", "tools"})
	require.NoError(t, err)
	assert.True(t, inv.noOpen)
	assert.Equal(t, 90*time.Second, inv.signInWait)
	assert.Equal(t, "https://example.com/elicit.json", inv.clientIDURL)
	inv, err = parse([]string{"--url", "https://mcp.example.com/mcp", "tools"})
	require.NoError(t, err)
	assert.Equal(t, defaultSignInWait, inv.signInWait)
	inv, err = parse([]string{"--url", "https://mcp.example.com/mcp", "--client-id", "elicit-1", "--client-secret-file", "s", "tools"})
	require.NoError(t, err)
	assert.Equal(t, "elicit-1", inv.clientID)
	assert.Equal(t, "s", inv.secretFile)

	inv, err = parse([]string{"logout"})
	require.NoError(t, err)
	assert.Equal(t, "logout", inv.command)
	assert.Empty(t, inv.url, "every sign-in")
	inv, err = parse([]string{"--url", "https://mcp.example.com/mcp", "logout"})
	require.NoError(t, err)
	assert.Equal(t, "logout", inv.command)
	assert.Equal(t, "https://mcp.example.com/mcp", inv.url)

	bad := map[string][]string{
		"--sign-in-timeout must be positive":                                    {"--url", "https://h/mcp", "--sign-in-timeout", "0s", "tools"},
		"--client-id-url must be the https URL":                                 {"--url", "https://h/mcp", "--client-id-url", "http://example.com/elicit.json", "tools"},
		`with a path (https://example.com/elicit.json, say)`:                    {"--url", "https://h/mcp", "--client-id-url", "https://example.com/", "tools"},
		"--client-id-url, --client-id and --client-secret-file belong to --url": {"--no-open", "tools", "--", "srv"},
		"belong to --url: a stdio server":                                       {"--client-id", "elicit", "tools", "--", "srv"},
		"--client-secret-file goes with --client-id":                            {"--url", "https://h/mcp", "--client-secret-file", "s", "tools"},
		"logout takes no arguments":                                             {"logout", "now"},
		"a stdio server is not signed in to":                                    {"logout", "--", "srv"},
		"--url must be an http:// or https:// URL":                              {"--url", "mcp.example.com", "logout"},
	}
	for want, argv := range bad {
		_, err := parse(argv)
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%v", argv)
		assert.Contains(t, err.Error(), want, "%v", argv)
	}
}

// Stepping up on a 403 insufficient_scope asks for the scopes held and those the challenge
// names (SEP-2350), and keeps the challenge's other parameters.
func TestWidenScope(t *testing.T) {
	resp := &http.Response{Header: http.Header{}}
	resp.Header.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="https://x.example/.well-known/oauth-protected-resource"`)
	widenScope(resp, []string{"mcp:basic", "mcp:write"})
	assert.Equal(t, `Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://x.example/.well-known/oauth-protected-resource"`,
		resp.Header.Get("WWW-Authenticate"))

	resp.Header.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="b"`)
	widenScope(resp, []string{"a"})
	assert.Equal(t, `Bearer error="insufficient_scope", scope="a b"`, resp.Header.Get("WWW-Authenticate"))

	resp.Header.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	widenScope(resp, []string{"a"})
	assert.Equal(t, `Bearer error="invalid_token"`, resp.Header.Get("WWW-Authenticate"), "only insufficient_scope is widened")
}
