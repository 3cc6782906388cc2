package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/oauth/oauthtest"
)

// signInBrowserEnv makes the test binary, started by elicit as $BROWSER, a person's browser
// that signs in: it follows the authorization link through the provider's login step
// (which approves at once) and back to elicit's loopback redirect.
const signInBrowserEnv = "ELICIT_TEST_SIGN_IN_BROWSER"

// signInBrowser is that browser; it returns the exit status.
func signInBrowser(link string) int {
	if err := followSignIn(context.Background(), link); err != nil {
		fmt.Fprintln(os.Stderr, "signing in:", err)
		return 1
	}
	return 0
}

// followSignIn follows an authorization link as a browser does, redirect after redirect,
// to elicit's loopback redirect, and checks that elicit's page says the sign-in went well.
func followSignIn(ctx context.Context, link string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("You are signed in")) {
		return fmt.Errorf("ended at %s with %s: %s", resp.Request.URL, resp.Status, page)
	}
	return nil
}

// signingIn is an elicit run that may sign in: its stderr is read line by line as it
// comes, so that the test can play the browser on the link it shows.
type signingIn struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	links  chan string // authorization links shown on stderr
	stderr syncBuffer
	read   chan struct{} // closed once stderr has ended
}

// startSigningIn starts elicit with config as its config directory and env added.
func startSigningIn(t *testing.T, config string, env []string, args ...string) *signingIn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	t.Cleanup(cancel)
	r := &signingIn{links: make(chan string, 4), read: make(chan struct{})}
	r.cmd = exec.CommandContext(ctx, elicitBin, args...)
	r.cmd.Env = append(os.Environ(), configEnv(config, env...)...)
	r.cmd.Stdout = &r.stdout
	out, err := r.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	go func() {
		defer close(r.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			_, _ = r.stderr.Write([]byte(sc.Text() + "\n"))
			if strings.Contains(sc.Text(), "/authorize?") {
				r.links <- sc.Text()
			}
		}
	}()
	return r
}

// link returns the next authorization link elicit shows on stderr. It fails the test if
// elicit ends, or shows none within failsafe.
func (r *signingIn) link(t *testing.T) string {
	t.Helper()
	select {
	case l := <-r.links:
		return l
	case <-r.read:
		res := r.wait(t)
		t.Fatalf("elicit exited (%d) without showing an authorization link on stderr\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	case <-time.After(failsafe):
		_ = r.cmd.Process.Kill()
		res := r.wait(t)
		t.Fatalf("elicit showed no authorization link on stderr within %s\nstderr: %s", failsafe, res.stderr)
	}
	return ""
}

// wait waits for elicit to exit and returns what it wrote and its exit status.
func (r *signingIn) wait(t *testing.T) runResult {
	t.Helper()
	<-r.read
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !assert.ErrorAs(t, err, &exit) {
		t.FailNow()
	}
	return runResult{r.stdout.String(), r.stderr.String(), r.cmd.ProcessState.ExitCode()}
}

// kept returns the sign-in elicit keeps for server under config.
func kept(t *testing.T, config, server string) *signInRecord {
	t.Helper()
	rec, err := (&signIns{dir: filepath.Join(config, "elicit", "sign-ins")}).load(server)
	require.NoError(t, err)
	require.NotNil(t, rec, "a sign-in is kept for %s", server)
	return rec
}

// serveOAuth starts elicitd --http on a loopback port whose URL is its --public-url, trusting
// p's access tokens and asking for the scope elicitd.
func serveOAuth(t *testing.T, p *oauthtest.Provider) *httpElicitd {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // elicitd's port now: its public URL is known before it starts
	s := serveHTTPArgs(t, []string{"--http", addr, "--public-url", "http://" + addr + "/mcp",
		"--auth-issuer", p.Issuer, "--auth-scope", "elicitd"})
	require.Equal(t, "http://"+addr+"/mcp", s.url)
	return s
}

// configEnv is the environment of an elicit whose config directory is config, with no
// static token.
func configEnv(config string, env ...string) []string {
	return append([]string{"XDG_CONFIG_HOME=" + config, "HOME=" + config, tokenEnv + "="}, env...)
}

// elicit --url, without a token, signs in when elicitd answers 401: with --no-open the link
// goes to stderr (stdout is the result's), a browser that follows it lets elicit finish
// ask_user, the sign-in is kept (0600) for the next run, which needs no browser; a static
// token takes precedence over it; logout forgets it. No token is ever shown or logged.
func TestURLSignsIn(t *testing.T) {
	p := oauthtest.Start(t)
	s := serveOAuth(t, p)
	noBrowser := "BROWSER=/nonexistent/browser" // a browser started would fail, and say so
	var tokens []string                         // the tokens elicit signed in for
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			config := t.TempDir()
			answers := writeFile(t, "answers.json", `[{"weight": 5}]`)
			call := []string{"--url", s.url, "--protocol", era, "--answers", answers, "call", "ask_user", "--args", weightArgs}

			r := startSigningIn(t, config, []string{noBrowser}, append([]string{"--no-open"}, call...)...)
			link := r.link(t)
			assert.True(t, strings.HasPrefix(link, p.Issuer+"/authorize?"), link)
			require.NoError(t, followSignIn(context.Background(), link))
			res := r.wait(t)
			require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
			assert.Equal(t, "completed", decodeOut(t, res.stdout)["status"], "stdout is the result alone")
			assert.Contains(t, res.stderr, s.url+" wants you to sign in.\nOpen this link in your browser to sign in:\n"+link+"\n")
			assert.NotContains(t, res.stderr, "could not open a browser", "--no-open starts none")
			assert.Contains(t, res.stderr, "elicit: signed in to "+s.url)

			dir := filepath.Join(config, "elicit", "sign-ins")
			info, err := os.Stat(dir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			info, err = entries[0].Info()
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the tokens are the user's alone")
			rec := kept(t, config, s.url)
			tokens = append(tokens, rec.Token.AccessToken, rec.Token.RefreshToken)

			again := runElicitEnv(t, configEnv(config, noBrowser), call...)
			require.Equal(t, 0, again.code, "stderr: %s", again.stderr)
			assert.Equal(t, "completed", decodeOut(t, again.stdout)["status"])
			assert.NotContains(t, again.stderr, "sign in", "the kept sign-in: no browser")

			// The access token has expired, by the time kept with it: the next run refreshes it
			// (no browser) and keeps the new one.
			expired, tok := *rec, *rec.Token
			tok.Expiry = time.Now().Add(-time.Minute)
			expired.Token = &tok
			require.NoError(t, (&signIns{dir: dir}).save(&expired))
			refreshed := runElicitEnv(t, configEnv(config, noBrowser), call...)
			require.Equal(t, 0, refreshed.code, "stderr: %s", refreshed.stderr)
			assert.Equal(t, "completed", decodeOut(t, refreshed.stdout)["status"])
			assert.NotContains(t, refreshed.stderr, "sign in", "a refresh needs no browser")
			fresh := kept(t, config, s.url)
			assert.NotEqual(t, rec.Token.AccessToken, fresh.Token.AccessToken, "a new access token, kept")
			assert.True(t, fresh.Token.Expiry.After(time.Now()))
			tokens = append(tokens, fresh.Token.AccessToken, fresh.Token.RefreshToken)

			static := runElicitEnv(t, configEnv(config, noBrowser, tokenEnv+"=not-a-token-of-the-provider-0123"), call...)
			assert.Equal(t, 1, static.code, "a static token wins over the kept sign-in, and is refused")
			assert.Contains(t, static.stderr, "the server refused the bearer token (401 Unauthorized): check --token-file or $ELICIT_TOKEN")
			assert.NotContains(t, static.stderr, "sign in", "with a static token, elicit never signs in")
			assert.NotContains(t, static.stderr, "not-a-token")
			static = runElicitEnv(t, configEnv(t.TempDir(), noBrowser, tokenEnv+"="+rec.Token.AccessToken), call...)
			require.Equal(t, 0, static.code, "the signed-in token, as a static one: stderr: %s", static.stderr)
			assert.NotContains(t, static.stderr, "sign in")

			for _, out := range []string{res.stdout, res.stderr, again.stdout, again.stderr, refreshed.stdout, refreshed.stderr, static.stdout, static.stderr} {
				for _, token := range []string{rec.Token.AccessToken, rec.Token.RefreshToken, fresh.Token.AccessToken, fresh.Token.RefreshToken} {
					assert.NotContains(t, out, token, "a token is never shown")
				}
			}

			out := runElicitEnv(t, configEnv(config), "--url", s.url, "logout")
			require.Equal(t, 0, out.code, "stderr: %s", out.stderr)
			assert.Equal(t, "elicit: signed out of "+s.url+"\n", out.stderr)
			entries, err = os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "logout removes the file")
		})
	}
	require.NotEmpty(t, tokens)
	for _, token := range tokens {
		assert.NotContains(t, s.stderr(), token, "nor does elicitd log one")
	}
}

// Without --no-open, elicit opens the link in the browser ($BROWSER), which signs in.
func TestURLSignInOpensTheBrowser(t *testing.T) {
	p := oauthtest.Start(t)
	s := serveOAuth(t, p)
	self, err := os.Executable()
	require.NoError(t, err)
	answers := writeFile(t, "answers.json", `[{"weight": 5}]`)
	r := runElicitEnv(t, configEnv(t.TempDir(), "BROWSER="+self, signInBrowserEnv+"=1"),
		"--url", s.url, "--answers", answers, "call", "ask_user", "--args", weightArgs)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Equal(t, "completed", decodeOut(t, r.stdout)["status"])
	assert.Contains(t, r.stderr, "Opened your browser to sign in. If it did not open, open this link:\n"+p.Issuer+"/authorize?")
}

// A person who never finishes signing in is waited for --sign-in-timeout, and told so;
// Ctrl-C ends the wait at once.
func TestURLSignInWaitEnds(t *testing.T) {
	p := oauthtest.Start(t)
	srv := serveOAuth(t, p)

	r := runElicitEnv(t, configEnv(t.TempDir()), "--url", srv.url, "--no-open", "--sign-in-timeout", "200ms", "tools")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "elicit: gave up waiting for the sign-in: the browser did not come back to elicit within 200ms (--sign-in-timeout); run elicit again to sign in\n")
	assert.Equal(t, 1, strings.Count(r.stderr, "Open this link"), "asked once: %s", r.stderr)
	assert.Empty(t, r.stdout)

	s := startSigningIn(t, t.TempDir(), nil, "--url", srv.url, "--no-open", "tools")
	s.link(t)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	res := s.wait(t)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "elicit: sign-in cancelled\n")
	assert.Equal(t, 1, strings.Count(res.stderr, "Open this link"), "asked once: %s", res.stderr)
}

// A client registered beforehand at the authorization server (--client-id, and for a
// confidential one --client-secret-file) signs in as that client: no registration.
func TestURLSignsInAsAClientRegisteredBeforehand(t *testing.T) {
	p := oauthtest.Start(t)
	s := serveOAuth(t, p)
	id, secret := p.RegisterClient(oauthtest.ClientOptions{RedirectURIs: []string{"http://127.0.0.1/callback"}, Confidential: true})
	secretFile := writeFile(t, "secret", secret+"\n")
	require.NoError(t, os.Chmod(secretFile, 0o600))
	config := t.TempDir()
	answers := writeFile(t, "answers.json", `[{"weight": 5}]`)
	r := startSigningIn(t, config, nil, "--no-open", "--url", s.url, "--client-id", id, "--client-secret-file", secretFile,
		"--answers", answers, "call", "ask_user", "--args", weightArgs)
	link := r.link(t)
	assert.Contains(t, link, "client_id="+id)
	require.NoError(t, followSignIn(context.Background(), link))
	res := r.wait(t)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	assert.Equal(t, "completed", decodeOut(t, res.stdout)["status"])
	rec := kept(t, config, s.url)
	assert.Equal(t, id, rec.ClientID, "the client registered beforehand, not a new registration")
	assert.NotContains(t, res.stderr, secret, "the secret is never shown")
}
