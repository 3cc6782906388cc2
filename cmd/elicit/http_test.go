package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpElicitd is an elicitd serving Streamable HTTP on a loopback port for elicit --url.
type httpElicitd struct {
	url string     // the MCP endpoint
	log syncBuffer // its stderr
}

func (s *httpElicitd) stderr() string { return s.log.String() }

var listensAt = regexp.MustCompile(`msg="serving MCP over Streamable HTTP" address=(\S+)`)

// serveHTTP starts elicitd --http on a free loopback port, with env added, and returns once
// it says where it listens. SIGTERM stops it when the test ends.
func serveHTTP(t *testing.T, env ...string) *httpElicitd {
	t.Helper()
	return serveHTTPArgs(t, []string{"--http", "127.0.0.1:0"}, env...)
}

// serveHTTPArgs is serveHTTP with elicitd's arguments given.
func serveHTTPArgs(t *testing.T, args []string, env ...string) *httpElicitd {
	t.Helper()
	s := &httpElicitd{}
	cmd := exec.Command(elicitdBin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	addr := make(chan string, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			_, _ = s.log.Write(append(sc.Bytes(), '\n'))
			if m := listensAt.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(&s.log, out)
	}()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-read // stderr ends when elicitd exits
		_ = cmd.Wait()
	}
	select {
	case a := <-addr:
		s.url = "http://" + a + "/mcp"
	case <-read:
		stop()
		t.Fatalf("elicitd exited before it listened:\n%s", s.stderr())
	case <-time.After(failsafe):
		stop()
		t.Fatalf("elicitd did not say where it listens:\n%s", s.stderr())
	}
	t.Cleanup(stop)
	return s
}

func TestParseURL(t *testing.T) {
	inv, err := parse([]string{"--url", "http://127.0.0.1:8080/mcp", "--token-file", "tok", "call", "ask_user", "--args", "{}"})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080/mcp", inv.url)
	assert.Equal(t, "tok", inv.tokenFile)
	assert.Empty(t, inv.server, "no server command with --url")

	bad := map[string][]string{
		"--url and -- SERVER_COMMAND are mutually exclusive": {"--url", "http://127.0.0.1:1/mcp", "tools", "--", "srv"},
		"mutually exclusive: elicit either connects":         {"--url", "http://127.0.0.1:1/mcp", "tools", "--"},
		"or --url for one served over HTTP":                  {"tools"},
		"--url must be an http:// or https:// URL":           {"--url", "127.0.0.1:8080", "tools"},
		`got "ftp://h/mcp"`:                                  {"--url", "ftp://h/mcp", "tools"},
		"--server-log is for a server elicit starts":         {"--url", "http://127.0.0.1:1/mcp", "--server-log", "x", "tools"},
		"-v shows the stderr of a server elicit starts":      {"--url", "http://127.0.0.1:1/mcp", "-v", "tools"},
		"--token-file belongs to --url":                      {"--token-file", "tok", "tools", "--", "srv"},
		"flag needs an argument: -url":                       {"tools", "--url"},
	}
	for want, argv := range bad {
		_, err := parse(argv)
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%v", argv)
		assert.Contains(t, err.Error(), want, "%v", argv)
	}
}

func TestLoadToken(t *testing.T) {
	const token = "s3cret-token-0123456789"
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == tokenEnv {
				return v
			}
			return ""
		}
	}
	load := func(u, file string, getenv func(string) string) (*invocation, string, error) {
		inv := &invocation{url: u, tokenFile: file}
		var stderr strings.Builder
		err := inv.loadToken(getenv, &stderr)
		return inv, stderr.String(), err
	}
	const local = "http://127.0.0.1:8080/mcp"

	inv, _, err := load(local, "", env(token))
	require.NoError(t, err)
	assert.Equal(t, token, inv.token, "from $ELICIT_TOKEN")

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("  "+token+"\r\n\n"), 0o644))
	require.NoError(t, os.Chmod(file, 0o644)) // whatever the umask
	inv, warned, err := load(local, file, env("from-the-environment"))
	require.NoError(t, err, "a file other users can read is accepted")
	assert.Equal(t, token, inv.token, "the file wins over the environment, trimmed")
	assert.Contains(t, warned, "can be read by other users")
	assert.NotContains(t, warned, token)

	require.NoError(t, os.Chmod(file, 0o600))
	_, warned, err = load(local, file, env(""))
	require.NoError(t, err)
	assert.Empty(t, warned, "a private file: no warning")

	inv, _, err = load("", "", env(token))
	require.NoError(t, err)
	assert.Empty(t, inv.token, "a stdio server is sent no token")
	inv, _, err = load(local, "", env(""))
	require.NoError(t, err)
	assert.Empty(t, inv.token, "no token: none sent")
	inv, _, err = load("https://mcp.example.com/mcp", "", env(token))
	require.NoError(t, err)
	assert.Equal(t, token, inv.token, "https to anywhere")

	for want, c := range map[string]struct {
		url, content string
		env          string
	}{
		"is empty":                                 {local, "\n", ""},
		"must hold the bearer token alone":         {local, token + "\nsecond line\n", ""},
		"one word of visible ASCII":                {local, "two words\n", ""},
		"plain http to another machine":            {"http://mcp.example.com/mcp", token, ""},
		"unset $ELICIT_TOKEN to connect without":   {"http://mcp.example.com/mcp", "", token},
		"--token-file: cannot read /nonexistent/t": {local, "", ""},
	} {
		name := ""
		switch {
		case c.content != "":
			name = filepath.Join(t.TempDir(), "token")
			require.NoError(t, os.WriteFile(name, []byte(c.content), 0o600))
		case c.env == "":
			name = "/nonexistent/t"
		}
		_, _, err := load(c.url, name, env(c.env))
		var ue *usageError
		require.ErrorAs(t, err, &ue, want)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), token, "a token is never quoted")
	}
}

// elicit --url drives elicitd over Streamable HTTP in both eras, a wrong answer re-prompted
// and the right one completing the call.
func TestURLScriptedInBothEras(t *testing.T) {
	s := serveHTTP(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			// A weight no log line could hold by chance (a timestamp such as 22.534Z holds "2.5").
			answers := writeFile(t, "answers.json", `[{"weight": -1}, {"weight": "1729.25"}]`)
			r := runElicit(t, "--url", s.url, "--protocol", era, "--answers", answers, "call", "ask_user", "--args", weightArgs)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			out := decodeOut(t, r.stdout)
			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"weight": 1729.25}, out["data"])
			assert.EqualValues(t, 2, out["attempts"])
			assert.Contains(t, r.stderr, "elicitd 0.1.0-dev asks (question 1): How heavy is it?", "the server names itself")
			assert.Contains(t, r.stderr, "asks (question 2): Package weight: must be a positive, finite number")

			r = runElicit(t, "--url", s.url, "--protocol", era, "tools")
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, strings.Split(r.stdout, "\n"), "ask_user")
		})
	}
	assert.NotContains(t, s.stderr(), "1729", "the server never logs an answer")
}

// A bearer token comes from --token-file (trimmed; other users may read the file, with a
// warning) or $ELICIT_TOKEN, never from a flag, and is never shown.
func TestURLBearerToken(t *testing.T) {
	const token = "elicit-test-token-0123456789"
	s := serveHTTP(t, "ELICITD_HTTP_TOKEN=another-token-abcdefghij,"+token)
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(token+"\n"), 0o600))
	require.NoError(t, os.Chmod(file, 0o644))
	wrong := writeFile(t, "wrong", "not-the-token-0123456789\n")
	noEnv := []string{tokenEnv + "="}
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			answers := writeFile(t, "answers.json", `[{"weight": 5}]`)
			call := []string{"--url", s.url, "--protocol", era, "--answers", answers, "call", "ask_user", "--args", weightArgs}

			r := runElicitEnv(t, noEnv, append([]string{"--token-file", file}, call...)...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			assert.Equal(t, "completed", decodeOut(t, r.stdout)["status"])
			assert.Contains(t, r.stderr, "can be read by other users")
			assert.NotContains(t, r.stderr, token)

			r = runElicitEnv(t, []string{tokenEnv + "=" + token}, call...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			assert.Equal(t, "completed", decodeOut(t, r.stdout)["status"])

			r = runElicitEnv(t, noEnv, call...)
			assert.Equal(t, 1, r.code)
			assert.Contains(t, r.stderr, "asks elicit to sign in (401 Unauthorized), but it publishes no OAuth protected resource metadata (RFC 9728)",
				"without a token, elicit would sign in, but this server does not say where")
			assert.Contains(t, r.stderr, "put it in a file and give --token-file FILE, or set $ELICIT_TOKEN")
			assert.Empty(t, r.stdout)

			r = runElicitEnv(t, []string{tokenEnv + "=" + token}, append([]string{"--token-file", wrong}, call...)...)
			assert.Equal(t, 1, r.code, "--token-file wins over the environment")
			assert.Contains(t, r.stderr, "the server refused the bearer token (401 Unauthorized)")
			assert.NotContains(t, r.stderr, "not-the-token")
		})
	}
	assert.NotContains(t, s.stderr(), token, "nor does the server log it")
}

// A URL-mode question (a secret, on elicitd's own page beside MCP) is shown as a link and,
// with --open, opened in the browser; the call completes once the page is sent.
func TestURLModeOverHTTP(t *testing.T) {
	s := serveHTTP(t)
	self, err := os.Executable()
	require.NoError(t, err)
	browser := []string{"BROWSER=" + self, "ELICIT_TEST_BROWSER=pin=654321"}
	base, err := url.Parse(s.url)
	require.NoError(t, err)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := runElicitEnv(t, browser, "--url", s.url, "--protocol", era, "--open", "call", "ask_user", "--args", pinArgs)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			text, structured, _ := strings.Cut(r.stdout, "\n")
			assert.Equal(t, "completed", decodeOut(t, text)["status"])
			assert.Equal(t, "654321", decodeOut(t, structured)["data"].(map[string]any)["pin"])
			assert.Contains(t, r.stderr, "asks (question 1): Your PIN, please.\nAnswer it in your browser: http://"+base.Host+"/",
				"the link, on elicitd's own address")
			assert.NotContains(t, r.stderr, "654321", "the secret is never shown in the terminal")
		})
	}
	assert.NotContains(t, s.stderr(), "654321")
}

// elicit --version names the MCP protocol versions it speaks, as its SDK lists them, and
// elicit reaches elicitd over HTTP at every one of them.
func TestVersion(t *testing.T) {
	versions := mcp.SupportedProtocolVersions()
	require.Contains(t, versions, "2026-07-28")
	require.Contains(t, versions, "2025-11-25")
	want := "elicit " + version + " (MCP " + strings.Join(versions, ", ") + ")\n"
	for _, argv := range [][]string{{"--version"}, {"-version"}, {"--url", "nonsense", "--version", "tools"}} {
		r := runElicit(t, argv...)
		assert.Equal(t, 0, r.code, "%v", argv)
		assert.Equal(t, want, r.stdout, "%v", argv)
	}
	assert.Regexp(t, `^elicit 0\.1\.0 \(MCP 2026-07-28, 2025-11-25, 2025-06-18(, \d{4}-\d\d-\d\d)*\)\n$`, want)

	s := serveHTTP(t)
	for _, v := range versions {
		r := runElicit(t, "--url", s.url, "--protocol", v, "tools")
		assert.Equal(t, 0, r.code, "MCP %s: %s", v, r.stderr)
		assert.Contains(t, strings.Split(r.stdout, "\n"), "ask_user", "MCP %s", v)
	}
	r := runElicit(t, "tools", "--", "sh", "-c", "exit 3", "--version")
	assert.NotEqual(t, want, r.stdout, "a --version after -- is the server's")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The token goes to --url's own origin only: a redirect elsewhere is sent without it. A
// refusal is remembered, to explain a failed connection.
func TestBearerGoesToItsOriginOnly(t *testing.T) {
	var sent []string
	b := &bearer{token: "tok-0123456789abcdef", scheme: "https", host: "mcp.example.com",
		base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent = append(sent, r.URL.String()+" "+r.Header.Get("Authorization"))
			return &http.Response{StatusCode: http.StatusUnauthorized, Body: http.NoBody}, nil
		})}
	for _, u := range []string{"https://MCP.example.com/mcp", "https://elsewhere.example.com/mcp", "http://mcp.example.com/mcp"} {
		req, err := http.NewRequest(http.MethodPost, u, nil)
		require.NoError(t, err)
		_, err = b.RoundTrip(req)
		require.NoError(t, err)
		assert.Empty(t, req.Header.Get("Authorization"), "the caller's request is not changed")
	}
	assert.Equal(t, []string{
		"https://MCP.example.com/mcp Bearer tok-0123456789abcdef",
		"https://elsewhere.example.com/mcp ",
		"http://mcp.example.com/mcp ",
	}, sent)
	var w strings.Builder
	b.explain(&w)
	assert.Equal(t, "the server refused the bearer token (401 Unauthorized): check --token-file or $ELICIT_TOKEN\n", w.String())
	assert.NotContains(t, w.String(), b.token)
}

// A tool whose input schema marks an argument with x-mcp-header (SEP-2243, 2026-07-28) gets
// it mirrored into an Mcp-Param-* header, which the server checks: go-sdk's client adds the
// header from the tool's schema, known once the tools are listed, so elicit lists them
// before it calls one (the conformance suite's http-custom-headers).
func TestURLMirrorsXMCPHeaderArguments(t *testing.T) {
	s := serveHTTPArgs(t, []string{"--http", "127.0.0.1:0", "--conformance-fixtures"})
	r := runElicit(t, "--url", s.url, "call", "test_x_mcp_header", "--args", `{"region": "us-west1"}`)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, `"region":"us-west1"`)
}

// tools --json prints the tools as the server lists them, input schemas as sent: JSON
// Schema 2020-12 keywords and all (the conformance suite's json-schema-2020-12-preservation
// sends one back through a tool).
func TestToolsAsJSON(t *testing.T) {
	s := serveHTTPArgs(t, []string{"--http", "127.0.0.1:0", "--conformance-fixtures"})
	r := runElicit(t, "--url", s.url, "tools", "--json")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var tools []struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tools), r.stdout)
	i := slices.IndexFunc(tools, func(tool struct {
		Name        string         `json:"name"`
		InputSchema map[string]any `json:"inputSchema"`
	}) bool {
		return tool.Name == "json_schema_2020_12_tool"
	})
	require.GreaterOrEqual(t, i, 0)
	schema := tools[i].InputSchema
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", schema["$schema"])
	assert.Equal(t, false, schema["additionalProperties"])
	for _, k := range []string{"$defs", "allOf", "if", "then", "else"} {
		assert.Contains(t, schema, k)
	}
	assert.Equal(t, "addressDef", schema["$defs"].(map[string]any)["address"].(map[string]any)["$anchor"])

	r = runElicit(t, "--url", s.url, "call", "ask_user", "--json")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--json belongs to tools")
}
