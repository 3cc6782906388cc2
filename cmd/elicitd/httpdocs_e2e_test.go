package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/http.md is followed as a reader would: its curl recipes are run with sh against a real
// elicitd --http, its host snippets are parsed, and its elicit --url lines are run.

const httpDoc = "../../docs/http.md"

// docBlock is one fenced code block of a Markdown file, under the heading it follows.
type docBlock struct {
	heading string // the nearest heading above it, without its #s
	section string // the nearest level-2 heading above it
	lang    string
	text    string
}

var fence = regexp.MustCompile("^```(\\w*)\\s*$")

// docBlocks reads the fenced blocks of a Markdown file.
func docBlocks(t *testing.T, name string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	var (
		blocks           []docBlock
		heading, section string
		open             *docBlock
	)
	for line := range strings.Lines(string(data)) {
		bare := strings.TrimRight(line, "\n")
		if open != nil {
			if bare == "```" {
				blocks, open = append(blocks, *open), nil
				continue
			}
			open.text += line
			continue
		}
		if m := fence.FindStringSubmatch(bare); m != nil {
			open = &docBlock{heading: heading, section: section, lang: m[1]}
			continue
		}
		if level := len(bare) - len(strings.TrimLeft(bare, "#")); level > 0 && strings.HasPrefix(bare[level:], " ") {
			heading = strings.TrimSpace(bare[level:])
			if level <= 2 {
				section = heading
			}
		}
	}
	require.Nil(t, open, "%s: a code block is never closed", name)
	return blocks
}

// curlRecipes returns each era's recipe, keyed by its protocol version: the sh blocks under
// the heading "... (VERSION): curl recipe", joined in order, as a reader pastes them into one
// shell.
func curlRecipes(t *testing.T) map[string]string {
	t.Helper()
	heading := regexp.MustCompile(`\((\d{4}-\d\d-\d\d)\): curl recipe$`)
	recipes := map[string]string{}
	for _, b := range docBlocks(t, httpDoc) {
		if m := heading.FindStringSubmatch(b.heading); m != nil && b.lang == "sh" {
			recipes[m[1]] += b.text
		}
	}
	require.Contains(t, recipes, "2025-11-25", "docs/http.md has a push-era curl recipe")
	require.Contains(t, recipes, "2026-07-28", "docs/http.md has a pull-era curl recipe")
	require.Len(t, recipes, 2)
	return recipes
}

// runRecipe runs a recipe with sh -e in an empty directory, $ELICITD_URL set to url, and
// returns every JSON value it printed (a recipe prints only JSON, so its last value is its
// outcome), and how sh exited. It fails the test if the recipe hangs or prints other text.
func runRecipe(t *testing.T, url, recipe string) ([]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", recipe)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "ELICITD_URL="+url)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "the recipe did not finish within %s\nstdout: %s\nstderr: %s", failsafe, stdout.String(), stderr.String())
	if err != nil {
		err = fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	printed := stdout.String()
	var values []any
	dec := json.NewDecoder(&stdout)
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "a recipe prints only JSON: %s\nstderr: %s", printed, stderr.String())
		values = append(values, v)
	}
	require.NotEmpty(t, values, "the recipe printed nothing; stderr: %s", stderr.String())
	return values, err
}

// TestHTTPDocsCurlRecipes runs each era's curl recipe, exactly as docs/http.md has it, against
// a real elicitd --http: it must end with the completed result holding the answer it sent.
func TestHTTPDocsCurlRecipes(t *testing.T) {
	s := startHTTP(t)
	recipes := curlRecipes(t)
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			recipe := recipes[era]
			require.Contains(t, recipe, "$ELICITD_URL", "the recipe reaches elicitd through $ELICITD_URL")
			values, err := runRecipe(t, s.url, recipe)
			require.NoError(t, err)
			out, ok := values[len(values)-1].(map[string]any)
			require.True(t, ok, "the recipe ends with the call's result: %v", values)
			assert.Equal(t, "completed", out["status"], "%v", out)
			assert.Equal(t, map[string]any{"name": "Ada"}, out["data"], "the answer the recipe sent")
			asked, _ := json.Marshal(values[:len(values)-1])
			assert.Contains(t, string(asked), "Who is the parcel for?", "the recipe shows the question before answering it")
			if era == "2026-07-28" {
				assert.Equal(t, toAny(mcp.SupportedProtocolVersions()), values[0], "server/discover's versions")
			}
		})
	}
	assert.NotContains(t, s.stderr.String(), "Ada", "answers are never logged")
}

// The recipes' assertions can fail: a recipe that declines ends declined, and a 2026-07-28
// call without the Mcp-Name header the SDK requires ends with the SDK's refusal, printed.
func TestHTTPDocsCurlRecipesCanFail(t *testing.T) {
	s := startHTTP(t)
	for era, recipe := range curlRecipes(t) {
		t.Run(era+"/decline", func(t *testing.T) {
			require.Equal(t, 1, strings.Count(recipe, `"accept"`), "one answer in the recipe")
			values, err := runRecipe(t, s.url, strings.Replace(recipe, `"accept"`, `"decline"`, 1))
			require.NoError(t, err)
			out, _ := values[len(values)-1].(map[string]any)
			assert.Equal(t, "declined", out["status"], "%v", values)
		})
	}
	t.Run("2026-07-28/without Mcp-Name", func(t *testing.T) {
		recipe := curlRecipes(t)["2026-07-28"]
		header := regexp.MustCompile(`(?m)^\s*-H 'Mcp-Name: ask_user' \\\n`)
		require.Len(t, header.FindAllString(recipe, -1), 1)
		values, err := runRecipe(t, s.url, header.ReplaceAllString(recipe, ""))
		assert.Error(t, err, "with no input requests, the recipe stops")
		last, _ := values[len(values)-1].(map[string]any)
		refusal, _ := last["error"].(map[string]any)
		require.NotNil(t, refusal, "the refusal is printed: %v", values)
		assert.EqualValues(t, -32020, refusal["code"])
		assert.Contains(t, refusal["message"], "Mcp-Name")
	})
}

// The host snippets are JSON a host takes: an http entry with the endpoint and a bearer token,
// or, for a host that signs in with OAuth, the endpoint alone.
func TestHTTPDocsHostSnippets(t *testing.T) {
	keys, oauthKeys := map[string]bool{}, map[string]bool{}
	for _, b := range docBlocks(t, httpDoc) {
		if b.lang != "json" {
			continue
		}
		var doc map[string]map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		}
		require.NoError(t, json.Unmarshal([]byte(b.text), &doc), "a JSON snippet: %s", b.text)
		for key, servers := range doc {
			keys[key] = true
			entry, ok := servers["elicitd"]
			require.True(t, ok, "%s names the server elicitd", key)
			assert.Equal(t, "http", entry.Type)
			assert.Regexp(t, `^https://[^/]+/mcp$`, entry.URL)
			if b.heading == "MCP hosts with OAuth" {
				oauthKeys[key] = true
				assert.Empty(t, entry.Headers, "a host that signs in brings its own token")
				continue
			}
			assert.Regexp(t, `^Bearer \S+$`, entry.Headers["Authorization"])
		}
	}
	assert.True(t, keys["mcpServers"], "the mcpServers format")
	assert.True(t, keys["servers"], "VS Code's format")
	assert.Equal(t, map[string]bool{"mcpServers": true, "servers": true}, oauthKeys, "both formats, for OAuth")
}

// The elicit --url lines of docs/http.md that need no person (tools, and a call answered
// from a script) run as written against a real elicitd --http, from the repository's root.
func TestHTTPDocsElicitLines(t *testing.T) {
	dir := t.TempDir()
	out, err := goBuild(filepath.Join(dir, "elicit"), "../elicit")
	require.NoError(t, err, "building elicit: %s", out)
	s := startHTTP(t)
	var ran int
	for _, b := range docBlocks(t, httpDoc) {
		if b.section != "elicit --url" || b.lang != "sh" {
			continue
		}
		for line := range strings.Lines(b.text) {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "elicit --url \"$ELICITD_URL\" ") || !strings.Contains(line, "--answers") && !strings.HasSuffix(line, " tools") {
				continue // a person answers it, or it needs a server elsewhere
			}
			ran++
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			cmd := exec.CommandContext(ctx, "sh", "-c", line)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "ELICITD_URL="+s.url, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			cancel()
			require.NoError(t, err, "%s\nstderr: %s", line, stderr.String())
			if strings.Contains(line, " call ") {
				var res map[string]any
				require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "%s: %s", line, stdout.String())
				assert.Equal(t, "completed", res["status"], "%s: %v\nstderr: %s", line, res, stderr.String())
			} else {
				assert.Contains(t, strings.Split(stdout.String(), "\n"), "ask_user", line)
			}
		}
	}
	assert.GreaterOrEqual(t, ran, 2, "docs/http.md shows elicit --url listing tools and answering from a script")
}

// elicitd --version names the MCP protocol versions it speaks: exactly those a running elicitd
// advertises in server/discover, each of the earlier ones negotiated by initialize as asked.
func TestVersionNamesTheMCPVersions(t *testing.T) {
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`^elicitd (\S+) \(MCP ([^)]+)\)\n$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "%q", out)
	assert.Equal(t, version, m[1])
	listed := strings.Split(m[2], ", ")
	assert.Equal(t, mcp.SupportedProtocolVersions(), listed, "the SDK's list, newest first")
	require.Contains(t, listed, "2026-07-28")
	require.Contains(t, listed, "2025-11-25")

	s := startHTTP(t)
	meta := map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: map[string]any{}}
	discovered := postJSON(t, s.url, "2026-07-28", "server/discover",
		map[string]any{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": map[string]any{"_meta": meta}})
	assert.Equal(t, toAny(listed), discovered["result"].(map[string]any)["supportedVersions"], "what the server advertises")
	for _, v := range listed {
		if v >= "2026-07-28" {
			continue // no initialize in that era: server/discover above
		}
		init := postJSON(t, s.url, "", "initialize", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
			"params": map[string]any{"protocolVersion": v, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
		assert.Equal(t, v, init["result"].(map[string]any)["protocolVersion"], "initialize at %s is answered at %s", v, v)
	}
}

// postJSON POSTs one JSON-RPC request to url and returns the message answering it.
func postJSON(t *testing.T, url, version, method string, body map[string]any) map[string]any {
	t.Helper()
	_, msg := postMessage(t, url, version, method, "", body)
	return msg
}

// postMessage POSTs one JSON-RPC request to url (for a 2026-07-28 tools/call, name is the
// tool's, for its Mcp-Name header) and returns the response's Content-Type and the message
// answering the request, read as any client reads it: the body itself when it is
// application/json, the first "data: " line of an SSE stream.
func postMessage(t *testing.T, url, version, method, name string, body map[string]any) (string, map[string]any) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(timeout(t), http.MethodPost, url, bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
		req.Header.Set("Mcp-Method", method)
	}
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", raw)
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	var out map[string]any
	switch ct {
	case "application/json":
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
		return ct, out
	case "text/event-stream":
		for line := range strings.Lines(string(raw)) {
			if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				require.NoError(t, json.Unmarshal([]byte(msg), &out))
				return ct, out
			}
		}
	}
	t.Fatalf("no message in the response (%s): %s", res.Header.Get("Content-Type"), raw)
	return "", nil
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
