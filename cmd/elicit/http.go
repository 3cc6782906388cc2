package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenEnv names the environment variable a bearer token for --url may come from. A token
// never comes from a flag's value: the command line is visible to every local user.
const tokenEnv = "ELICIT_TOKEN"

// maxTokenBytes bounds what --token-file reads: a token is a line, not a file's worth.
const maxTokenBytes = 16 << 10

// loadToken sets inv.token for --url: from --token-file when given, else from $ELICIT_TOKEN.
// The token is one word of visible ASCII; a file's surrounding whitespace (its newline) is
// trimmed. No message quotes it. A token is refused for plain http beyond this machine,
// where anyone on the way could read it.
func (inv *invocation) loadToken(getenv func(string) string, stderr io.Writer) error {
	if inv.url == "" {
		return nil
	}
	from := "$" + tokenEnv
	token := getenv(tokenEnv)
	if inv.tokenFile != "" {
		from = "--token-file " + inv.tokenFile
		data, err := readToken(inv.tokenFile, stderr)
		if err != nil {
			return err
		}
		token = data
	}
	token = strings.TrimSpace(token)
	switch {
	case token == "" && inv.tokenFile != "":
		return usagef("%s is empty: it should hold the bearer token", from)
	case token == "":
		return nil
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		return usagef("%s must hold the bearer token alone, one word of visible ASCII (no spaces, no further lines)", from)
	}
	u, _ := url.Parse(inv.url) // checked by parse
	if !httpsOrLoopback(u) {
		hint := ""
		if inv.tokenFile == "" {
			hint = fmt.Sprintf(" (unset $%s to connect without one)", tokenEnv)
		}
		return usagef("--url %s is plain http to another machine: elicit sends a bearer token only over https, or http to this machine%s", inv.url, hint)
	}
	inv.token = token
	return nil
}

// loadSecret sets inv.secret from --client-secret-file: the secret of the client registered
// beforehand (--client-id), one word of visible ASCII, its surrounding whitespace trimmed.
// No message quotes it.
func (inv *invocation) loadSecret(stderr io.Writer) error {
	if inv.secretFile == "" {
		return nil
	}
	data, err := readSecretFile("--client-secret-file", inv.secretFile, stderr)
	if err != nil {
		return err
	}
	secret := strings.TrimSpace(data)
	switch {
	case secret == "":
		return usagef("--client-secret-file %s is empty: it should hold the client's secret", inv.secretFile)
	case strings.ContainsFunc(secret, func(r rune) bool { return r <= ' ' || r > '~' }):
		return usagef("--client-secret-file %s must hold the client's secret alone, one word of visible ASCII", inv.secretFile)
	}
	inv.secret = secret
	return nil
}

// readToken reads a token file. One that other users can read is accepted, with a warning.
func readToken(name string, stderr io.Writer) (string, error) {
	return readSecretFile("--token-file", name, stderr)
}

// readSecretFile reads the file of flag, which holds a secret (a token, a client secret).
// One that other users can read is accepted, with a warning.
func readSecretFile(flag, name string, stderr io.Writer) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", usagef("%s: cannot read %s: %v", flag, name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return "", usagef("%s %s must be a file holding the %s", flag, name, secretOf(flag))
	}
	if info.Mode().Perm()&0o004 != 0 && runtime.GOOS != "windows" {
		fmt.Fprintf(stderr, "elicit: warning: %s %s can be read by other users of this machine (chmod 600 it)\n", flag, name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", usagef("%s: cannot read %s: %v", flag, name, err)
	}
	if len(data) > maxTokenBytes {
		return "", usagef("%s %s is larger than %d bytes: it should hold the %s alone", flag, name, maxTokenBytes, secretOf(flag))
	}
	return string(data), nil
}

func secretOf(flag string) string {
	if flag == "--token-file" {
		return "bearer token"
	}
	return "client's secret"
}

// httpsOrLoopback reports whether u is https, or http to this machine only: where elicit
// sends a token or signs in.
func httpsOrLoopback(u *url.URL) bool {
	return u.Scheme == "https" || loopback(u.Hostname())
}

// loopback reports whether host (a name or an address) is this machine only.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpTransport is go-sdk's Streamable HTTP client transport to --url, with the bearer token,
// if any, on every request to that origin. Without a token, a server that answers 401 is
// signed in to (signIn). The protocol version asked for picks the era: 2026-07-28 requests
// are stateless, earlier versions get a session, and on it the standalone SSE stream (a GET
// the SDK opens after initialize) on which the server may ask too. The transport is handed
// to the SDK as it is, never wrapped: the SDK's connection would lose what it learns of the
// session (see recordingTransport), so the requested schemas in the server's responses are
// recorded from the HTTP bodies instead (schemaTap).
func (c *client) httpTransport() (mcp.Transport, *bearer) {
	u, _ := url.Parse(c.inv.url) // checked by parse
	c.server = u.Host
	b := &bearer{token: c.inv.token, scheme: u.Scheme, host: u.Host, base: http.DefaultTransport}
	t := &mcp.StreamableClientTransport{Endpoint: c.inv.url, HTTPClient: &http.Client{Transport: schemaTap{b, &c.schemas}}}
	if c.inv.token == "" {
		s := newSignIn(c.inv.url, userSignIns(), c.stderr)
		s.open = !c.inv.noOpen
		s.wait = c.inv.signInWait
		s.clientIDURL = c.inv.clientIDURL
		s.clientID, s.clientSecret = c.inv.clientID, c.inv.secret
		b.signIn = s
		t.OAuthHandler = s
	}
	return t, b
}

// bearer sends the token to the endpoint's own origin only (a redirect elsewhere goes without
// it), and remembers a refusal, to explain a failed connection.
type bearer struct {
	token        string
	scheme, host string
	base         http.RoundTripper
	refused      atomic.Int32 // the last 401 or 403 status, or 0
	signIn       *signIn      // without a token: signing in, or nil
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" && r.URL.Scheme == b.scheme && strings.EqualFold(r.URL.Host, b.host) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	res, err := b.base.RoundTrip(r)
	if err == nil && (res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden) {
		b.refused.Store(int32(res.StatusCode))
	}
	return res, err
}

// signInFailure returns why signing in failed, or nil if it did not (or was not tried).
func (b *bearer) signInFailure() error {
	if b.signIn == nil {
		return nil
	}
	return b.signIn.failure()
}

// explain says why the server refused elicit, if it did.
func (b *bearer) explain(w io.Writer) {
	switch status := b.refused.Load(); {
	case status == http.StatusUnauthorized && b.signIn != nil:
		fmt.Fprintf(w, "the server refused the token elicit signed in for (401 Unauthorized): run elicit --url %s logout, and sign in again\n", b.signIn.server)
	case status == http.StatusUnauthorized:
		fmt.Fprintf(w, "the server refused the bearer token (401 Unauthorized): check --token-file or $%s\n", tokenEnv)
	case status == http.StatusForbidden:
		fmt.Fprintln(w, "the server refused the request (403 Forbidden)")
	}
}
