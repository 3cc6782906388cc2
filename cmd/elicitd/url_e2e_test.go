package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/page/pagetest"
)

// urlCaps declares forms and, when url is set, URL elicitation; nil (forms only, inferred
// from the handler) otherwise.
func urlCaps(url bool) *mcp.ClientCapabilities {
	if !url {
		return nil
	}
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
		Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
}

// secretForm mixes a plain field with a secret and a file.
var secretForm = map[string]any{"title": "Sign the contract", "fields": []any{
	map[string]any{"name": "user", "type": "text", "label": "User name", "required": true},
	map[string]any{"name": "password", "type": "text", "label": "Password", "sensitive": true, "required": true, "min_length": 8},
	map[string]any{"name": "contract", "type": "file", "label": "Signed contract", "required": true, "accept": []any{"application/pdf"}},
}}

var contractPDF = []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n")

// browser is a person's browser (pagetest's), failing the test when the page cannot be
// reached.
type browser struct {
	t *testing.T
	*pagetest.Browser
}

func newBrowser(t *testing.T) *browser {
	b := &browser{t, pagetest.New()}
	b.Client.Timeout = failsafe
	return b
}

func (b *browser) open(u string) (int, string) {
	status, page, err := b.Open(u)
	require.NoError(b.t, err)
	return status, page
}

// send fills in the form of page (as last shown) with fields and files, by field name, and
// sends it.
func (b *browser) send(u, page string, fields map[string]string, files map[string][]byte) (int, string) {
	status, out, err := b.Send(u, page, fields, files)
	require.NoError(b.t, err)
	return status, out
}

// pagePerson answers forms with form and, on a link, opens it in a browser of their own,
// first sends a password that is too short, then fixes it and sends the file.
type pagePerson struct {
	t    *testing.T
	form map[string]any

	mu    sync.Mutex
	modes []string
	urls  []string
	ids   []string
	pages []string // what the page said after each send
}

func (p *pagePerson) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	p.modes = append(p.modes, req.Params.Mode)
	p.mu.Unlock()
	if req.Params.Mode != "url" {
		schema, _ := json.Marshal(req.Params.RequestedSchema)
		assert.NotContains(p.t, string(schema), "password", "a secret is never asked in form mode")
		assert.NotContains(p.t, string(schema), "contract")
		return &mcp.ElicitResult{Action: "accept", Content: p.form}, nil
	}
	p.mu.Lock()
	p.urls = append(p.urls, req.Params.URL)
	p.ids = append(p.ids, req.Params.ElicitationID)
	p.mu.Unlock()
	b := newBrowser(p.t)
	status, page := b.open(req.Params.URL)
	require.Equal(p.t, http.StatusOK, status)
	status, page = b.send(req.Params.URL, page, map[string]string{"password": "hunter2"}, map[string][]byte{"contract": contractPDF})
	assert.Equal(p.t, http.StatusUnprocessableEntity, status)
	assert.Contains(p.t, page, `id="f-password-error">Password: must be at least 8 characters</p>`)
	assert.NotContains(p.t, page, "hunter2")
	status, page = b.send(req.Params.URL, page, map[string]string{"password": "correct horse battery"}, nil)
	assert.Equal(p.t, http.StatusOK, status, "the file was kept from the first send")
	p.mu.Lock()
	p.pages = append(p.pages, page)
	p.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept"}, nil
}

func TestURLModeAsksSecretsAndFilesOnThePageInBothEras(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			p := &pagePerson{t: t, form: map[string]any{"user": "ada"}}
			completed := make(chan string, 1)
			h := start(t, clientSetup{version: era.version, elicit: p.elicit, url: true,
				complete: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
					completed <- req.Params.ElicitationID
				}})
			res, err := h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
				Arguments: map[string]any{"message": "Sign in and attach the signed contract.", "form": secretForm}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.StructuredContent)

			assert.Equal(t, []string{"form", "url"}, p.modes, "the plain field in form mode, then the rest on the page")
			require.Len(t, p.urls, 1)
			u, err := url.Parse(p.urls[0])
			require.NoError(t, err)
			assert.Equal(t, "127.0.0.1", u.Hostname(), "the page listens on loopback")
			assert.Regexp(t, `^http://127\.0\.0\.1:\d+/elicit/[A-Z2-7]{52}$`, p.urls[0], "a random token and nothing else: no personal data")

			var out struct {
				Status string
				Data   map[string]any
			}
			b, _ := json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(b, &out))
			assert.Equal(t, "completed", out.Status)
			assert.Equal(t, "ada", out.Data["user"])
			assert.Equal(t, "correct horse battery", out.Data["password"], "the tool gets one answer")
			doc, _ := out.Data["contract"].(map[string]any)
			assert.Equal(t, "application/pdf", doc["type"])
			assert.EqualValues(t, len(contractPDF), doc["size"])
			assert.NotEmpty(t, doc["sha256"])

			text := res.Content[0].(*mcp.TextContent).Text
			assert.NotContains(t, text, "correct horse", "a secret is never in the result's text")
			assert.Contains(t, text, "application/pdf")
			assert.NotContains(t, text, doc["base64"])

			if era.version == "2025-11-25" {
				require.NotEmpty(t, p.ids[0], "a push-era URL elicitation has an elicitationId")
				select {
				case id := <-completed:
					assert.Equal(t, p.ids[0], id)
				case <-time.After(failsafe):
					t.Fatal("no notifications/elicitation/complete")
				}
			} else {
				assert.Empty(t, p.ids[0], "the 2026-07-28 URL input request has no elicitationId")
			}
			logs := h.stderr.String()
			for _, typed := range []string{"hunter2", "correct horse", "ada"} {
				assert.NotContains(t, logs, typed)
			}
		})
	}
}

func TestURLModeNeedsAClientThatDeclaresIt(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			h := start(t, clientSetup{version: era.version, elicit: accept(map[string]any{"user": "ada"})})
			out, isErr := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Sign in.", "form": secretForm})
			require.True(t, isErr)
			assert.Equal(t, "ELICITATION_UNSUPPORTED", out["code"])
			assert.Equal(t, "no_url_elicitation", out["reason"])
			assert.Contains(t, out["message"], "password, contract")
			missing, _ := json.Marshal(out["missing"])
			assert.Contains(t, string(missing), `"flat_key":"password"`)
			assert.NotContains(t, string(missing), `"flat_key":"user"`)
		})
	}
}

func TestURLModeDeclinedOnTheLink(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			h := start(t, clientSetup{version: era.version, url: true, elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if req.Params.Mode == "url" {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"user": "ada"}}, nil
			}})
			out, _ := h.call(t, timeout(t), "ask_user", map[string]any{"message": "Sign in.", "form": secretForm})
			assert.Equal(t, "declined", out["status"])
		})
	}
}

// A 2026-07-28 client that comes back before the page was sent is shown the same link again;
// once the page is sent, the retry completes.
func TestPullRetryBeforeThePageWasSentShowsTheLinkAgain(t *testing.T) {
	var urls []string
	h := start(t, clientSetup{version: "2026-07-28", url: true, args: []string{"--page-wait", "100ms"},
		elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			urls = append(urls, req.Params.URL)
			if len(urls) == 2 {
				b := newBrowser(t)
				_, page := b.open(req.Params.URL)
				status, _ := b.send(req.Params.URL, page, map[string]string{"pin": "123456"}, nil)
				assert.Equal(t, http.StatusOK, status)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	res, err := h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "Your PIN.", "form": map[string]any{"fields": []any{
		map[string]any{"name": "pin", "type": "text", "widget": "password", "required": true}}}}})
	require.NoError(t, err)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, `"status":"completed"`)
	assert.Contains(t, text, `"pin":"(a secret, given on elicitd's page: in the structured content only)"`)
	require.Len(t, urls, 2)
	assert.Equal(t, urls[0], urls[1], "the same link, shown again")
}

func TestHTTPServesThePageBesideMCP(t *testing.T) {
	s := startHTTP(t)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			p := &pagePerson{t: t, form: map[string]any{"user": "ada"}}
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: p.elicit, Capabilities: urlCaps(true)})
			cs, err := client.Connect(timeout(t), &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: era.version})
			require.NoError(t, err)
			defer cs.Close()
			res, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
				Arguments: map[string]any{"message": "Sign in.", "form": secretForm}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Len(t, p.urls, 1)
			assert.True(t, strings.HasPrefix(p.urls[0], strings.TrimSuffix(s.url, "/mcp")+"/elicit/"), "%s is served beside %s", p.urls[0], s.url)
			assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"status":"completed"`)
		})
	}
}

// A question sent with its own schema (Wire) is form mode only: a client that declares URL
// elicitation but no forms is told so, rather than sent a form it cannot show.
func TestURLOnlyClientGetsNoFormItCannotShow(t *testing.T) {
	urlOnly := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			h := start(t, clientSetup{version: era.version, caps: urlOnly, args: []string{"--conformance-fixtures"},
				elicit: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					t.Errorf("asked in %s mode", req.Params.Mode)
					return &mcp.ElicitResult{Action: "cancel"}, nil
				}})
			out, isErr := h.call(t, timeout(t), "test_elicitation", map[string]any{})
			require.True(t, isErr, "%v", out)
			assert.Equal(t, "ELICITATION_UNSUPPORTED", out["code"])
			assert.Equal(t, "no_form_elicitation", out["reason"])
		})
	}
}

// recorder keeps the last request a client sent, so that a test can send it again by hand.
type recorder struct {
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		r.mu.Lock()
		r.header, r.body = req.Header.Clone(), b
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// A 2026-07-28 retry that accepted the link waits for the page to be sent. If its connection
// drops meanwhile, no one can receive the answer: the question ends client_gone at once (not
// when the wait is over), and its link closes, so the person is not asked in vain.
func TestPullRetryWhoseConnectionDropsEndsTheQuestion(t *testing.T) {
	s := startHTTP(t, "ELICITD_LOG_LEVEL=debug")
	rec := &recorder{}
	cs := pullByHand(t, s, urlCaps(true), rec)
	form := map[string]any{"fields": []any{map[string]any{"name": "password", "type": "text", "sensitive": true, "required": true}}}
	first, err := cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "Sign in.", "form": form}})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	link := first.InputRequests["elicit-1"].(*mcp.ElicitParams).URL
	require.NotEmpty(t, link)
	b := newBrowser(t)
	status, _ := b.open(link)
	require.Equal(t, http.StatusOK, status, "the person has the page open")

	// The retry that says the link was opened, as the client sent the first call, by hand.
	rec.mu.Lock()
	header, body := rec.header, rec.body
	rec.mu.Unlock()
	var msg map[string]any
	require.NoError(t, json.Unmarshal(body, &msg))
	params := msg["params"].(map[string]any)
	params["requestState"] = first.RequestState
	params["inputResponses"] = map[string]any{"elicit-1": map[string]any{"action": "accept"}}
	msg["id"] = "retry-1"
	body, err = json.Marshal(msg)
	require.NoError(t, err)
	ctx, cut := context.WithCancel(timeout(t))
	defer cut()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = header
	sent := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
		}
		sent <- err
	}()
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "a retry waits for the page to be sent") },
		failsafe, 10*time.Millisecond, "the retry waits for the page:\n%s", s.stderr.String())
	cut()
	require.Error(t, <-sent, "the retry's connection dropped before its answer")
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "reason=client_gone") },
		failsafe, 10*time.Millisecond, "the question ends when its retry's connection drops:\n%s", s.stderr.String())
	status, page := b.open(link)
	assert.Equal(t, http.StatusNotFound, status, "the link closed with its question")
	assert.Contains(t, page, "its question has ended")
}
