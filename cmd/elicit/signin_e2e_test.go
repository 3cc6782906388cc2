package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

	mu     sync.Mutex
	stderr strings.Builder
	read   chan struct{} // closed once stderr has ended
}

// startSigningIn starts elicit with config as its config directory and env added.
func startSigningIn(t *testing.T, config string, env []string, args ...string) *signingIn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	t.Cleanup(cancel)
	r := &signingIn{links: make(chan string, 4), read: make(chan struct{})}
	r.cmd = exec.CommandContext(ctx, elicitBin, args...)
	r.cmd.Env = append(os.Environ(), append([]string{"XDG_CONFIG_HOME=" + config, "HOME=" + config, tokenEnv + "="}, env...)...)
	r.cmd.Stdout = &r.stdout
	out, err := r.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	go func() {
		defer close(r.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
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
	r.mu.Lock()
	defer r.mu.Unlock()
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

// elicit --url, without a token, signs in when the server answers 401: with --no-open the
// link goes to stderr (stdout is the result's), a browser that follows it lets elicit
// finish the call, the sign-in is kept for the next run, which needs no browser, and
// logout forgets it.
func TestURLSignsIn(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)
	config := t.TempDir()
	noBrowser := []string{"BROWSER=/nonexistent/browser"}

	r := startSigningIn(t, config, noBrowser, "--url", rs.url, "--no-open", "call", "whoami")
	link := r.link(t)
	assert.True(t, strings.HasPrefix(link, p.Issuer+"/authorize?"), link)
	require.NoError(t, followSignIn(context.Background(), link))
	res := r.wait(t)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	assert.Equal(t, "user\n", res.stdout, "the call's result, and nothing else")
	assert.Contains(t, res.stderr, rs.url+" wants you to sign in.\nOpen this link in your browser to sign in:\n"+link+"\n")
	assert.NotContains(t, res.stderr, "could not open a browser", "--no-open starts none")
	assert.Contains(t, res.stderr, "elicit: signed in to "+rs.url)

	rec := kept(t, config, rs.url)
	info, err := os.Stat(filepath.Join(config, "elicit", "sign-ins"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	entries, err := os.ReadDir(filepath.Join(config, "elicit", "sign-ins"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	info, err = entries[0].Info()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the tokens are the user's alone")

	// The next run: the kept sign-in, no browser (one would fail to start).
	again := runElicitEnv(t, append([]string{"XDG_CONFIG_HOME=" + config, "HOME=" + config, tokenEnv + "="}, noBrowser...), "--url", rs.url, "call", "whoami")
	require.Equal(t, 0, again.code, "stderr: %s", again.stderr)
	assert.Equal(t, "user\n", again.stdout)
	assert.NotContains(t, again.stderr, "sign in")

	for _, out := range []string{res.stdout, res.stderr, again.stdout, again.stderr} {
		assert.NotContains(t, out, rec.Token.AccessToken, "a token is never shown")
		assert.NotContains(t, out, rec.Token.RefreshToken, "a token is never shown")
	}

	out := runElicitEnv(t, []string{"XDG_CONFIG_HOME=" + config, "HOME=" + config}, "--url", rs.url, "logout")
	require.Equal(t, 0, out.code, "stderr: %s", out.stderr)
	assert.Equal(t, "elicit: signed out of "+rs.url+"\n", out.stderr)
	entries, err = os.ReadDir(filepath.Join(config, "elicit", "sign-ins"))
	require.NoError(t, err)
	assert.Empty(t, entries, "logout removes the file")
}

// Without --no-open, elicit opens the link in the browser ($BROWSER), which signs in.
func TestURLSignInOpensTheBrowser(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)
	self, err := os.Executable()
	require.NoError(t, err)
	r := runElicitEnv(t, []string{"XDG_CONFIG_HOME=" + t.TempDir(), tokenEnv + "=", "BROWSER=" + self, signInBrowserEnv + "=1"},
		"--url", rs.url, "call", "whoami")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Equal(t, "user\n", r.stdout)
	assert.Contains(t, r.stderr, "Opened your browser to sign in. If it did not open, open this link:\n"+p.Issuer+"/authorize?")
}

// A static token wins: elicit sends it, and never signs in, even when it is refused.
func TestURLStaticTokenIsNeverSignedInFor(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)
	r := runElicitEnv(t, []string{"XDG_CONFIG_HOME=" + t.TempDir(), tokenEnv + "=not-a-token-of-the-provider-0123"},
		"--url", rs.url, "--no-open", "call", "whoami")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "the server refused the bearer token (401 Unauthorized): check --token-file or $ELICIT_TOKEN")
	assert.NotContains(t, r.stderr, "sign in")
	assert.NotContains(t, r.stderr, "not-a-token")

	token := p.Token(oauthtestClaims(rs.url))
	r = runElicitEnv(t, []string{"XDG_CONFIG_HOME=" + t.TempDir(), tokenEnv + "=" + token}, "--url", rs.url, "--no-open", "call", "whoami")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Equal(t, "static\n", r.stdout, "the static token's subject")
	assert.NotContains(t, r.stderr, token)
}

func oauthtestClaims(resource string) oauthtest.Claims {
	return oauthtest.Claims{Subject: "static", Audience: []string{resource}, Scope: "elicitd"}
}

// A person who never finishes signing in is waited for --sign-in-timeout, and told so;
// Ctrl-C ends the wait at once.
func TestURLSignInWaitEnds(t *testing.T) {
	p := oauthtest.Start(t)
	rs := startResourceServer(t, p)

	r := runElicitEnv(t, []string{"XDG_CONFIG_HOME=" + t.TempDir(), tokenEnv + "="},
		"--url", rs.url, "--no-open", "--sign-in-timeout", "200ms", "call", "whoami")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "elicit: gave up waiting for the sign-in: the browser did not come back to elicit within 200ms (--sign-in-timeout); run elicit again to sign in\n")
	assert.Equal(t, 1, strings.Count(r.stderr, "Open this link"), "asked once: %s", r.stderr)
	assert.Empty(t, r.stdout)

	s := startSigningIn(t, t.TempDir(), nil, "--url", rs.url, "--no-open", "call", "whoami")
	s.link(t)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	res := s.wait(t)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "elicit: sign-in cancelled\n")
	assert.Equal(t, 1, strings.Count(res.stderr, "Open this link"), "asked once: %s", res.stderr)
}
