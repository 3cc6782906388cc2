package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apartSchema is the form the server asks for apart from the call: its properties not in
// alphabetical order, each with a default (SEP-1034).
const apartSchema = `{"type": "object", "properties": {
	"zone": {"type": "string", "default": "eu-west"},
	"count": {"type": "integer", "default": 3},
	"archive": {"type": "boolean", "default": true}}}`

// serveAskingApart serves, over Streamable HTTP (stateful, the 2025-11-25 wire), a go-sdk
// MCP server whose tool ask_apart asks its question with an elicitation/create that is not
// tied to the call: go-sdk sends a request made with a context not derived from the call's
// on the session's standalone SSE stream, the GET the client opens after initialize. The
// tool returns the answer. The returned counter counts the GETs the server was sent.
func serveAskingApart(t *testing.T) (endpoint string, gets *atomic.Int32) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "apart", Version: "1.0"}, nil)
	server.AddTool(&mcp.Tool{Name: "ask_apart", InputSchema: json.RawMessage(`{"type": "object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// None of the call's values, so the request is the session's, not the call's; it
			// ends with the call all the same.
			apart, cancel := context.WithCancel(context.Background())
			defer cancel()
			defer context.AfterFunc(ctx, cancel)()
			res, err := req.Session.Elicit(apart, &mcp.ElicitParams{
				Message:         "Where should the job run?",
				RequestedSchema: json.RawMessage(apartSchema),
			})
			if err != nil {
				return nil, err
			}
			out := map[string]any{"action": res.Action, "content": res.Content}
			text, err := json.Marshal(out)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	gets = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", gets
}

// A client that declares elicitation takes the server's questions wherever the transport
// lets the server ask: in the 2025-11-25 era over Streamable HTTP, that includes the
// standalone SSE stream, which elicit opens after initialize and answers on.
func TestURLAnswersOnTheStandaloneStream(t *testing.T) {
	endpoint, gets := serveAskingApart(t)
	answers := writeFile(t, "answers.json", `[{}]`) // the form accepted as shown
	r := runElicit(t, "--url", endpoint, "--protocol", "2025-11-25", "--timeout", "60s", "--answers", answers, "call", "ask_apart")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Positive(t, gets.Load(), "elicit opened the standalone SSE stream")
	assert.Contains(t, r.stderr, "apart 1.0 asks (question 1): Where should the job run?")
	out := decodeOut(t, r.stdout)
	assert.Equal(t, "accept", out["action"])
	assert.Equal(t, map[string]any{"zone": "eu-west", "count": 3.0, "archive": true}, out["content"], "the defaults, filled in")

	// The question on that stream is shown in the server's order too.
	answers = writeFile(t, "answers.json", `[{"colour": "red"}]`)
	r = runElicit(t, "--url", endpoint, "--protocol", "2025-11-25", "--timeout", "60s", "--answers", answers, "call", "ask_apart")
	require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, "gives colour, which question 1 does not ask (it asks zone, count, archive)")
}

// Over Streamable HTTP, a form's fields are asked in the order the server sent them, in
// both eras (the SDK hands elicit the requested schema as a map, which has lost it).
func TestURLKeepsTheServersOrder(t *testing.T) {
	s := serveHTTP(t)
	const args = `{"message": "Which parcel?", "form": {"title": "Parcel", "fields": [
		{"name": "zeta", "type": "text", "label": "Zeta"},
		{"name": "alpha", "type": "text", "label": "Alpha"},
		{"name": "mid", "type": "number", "label": "Mid"}]}}`
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			answers := writeFile(t, "answers.json", `[{"colour": "red"}]`)
			r := runElicit(t, "--url", s.url, "--protocol", era, "--answers", answers, "call", "ask_user", "--args", args)
			require.Equal(t, 1, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, "gives colour, which question 1 does not ask (it asks zeta, alpha, mid)")
		})
	}
}
