package ask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
)

type whereIn struct {
	Region string `json:"region"`
	Note   string `json:"note,omitempty"`
}

// go-sdk holds a bare input schema for a tool whose own has no x-mcp-header (listing.go):
// tools/list still sends every tool's schema in full, and a tool whose schema binds an
// argument to a header still has that header checked, over Streamable HTTP at 2026-07-28.
func TestToolsListSendsFullSchemasAndHeadersAreStillChecked(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Clock: clock.NewMock()})
	defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()

	plain := ask.NewTool("plain", "Plain", "no header", func(_ context.Context, in whereIn) (ask.Text, error) {
		return ask.Text("plain " + in.Region), nil
	})
	bound := ask.InputSchema[whereIn]()
	bound.Properties["region"].Extra = map[string]any{"x-mcp-header": "Region"}
	where := ask.RawTool[whereIn]("where", "Where", "region in a header", func(_ context.Context, args json.RawMessage) (any, error) {
		return ask.Text("where " + string(args)), nil
	}).WithInputSchema(bound)
	el.Add(server, plain, where)
	el.AddManagement(server)

	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), failsafeBound)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	want := map[string]*jsonschema.Schema{
		"plain": ask.InputSchema[whereIn](), "where": bound,
		"list_elicitations": nil, "cancel_elicitation": nil, "extend_elicitation": nil,
	}
	require.Len(t, list.Tools, len(want))
	for _, tool := range list.Tools {
		got, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		require.Contains(t, want, tool.Name)
		if w := want[tool.Name]; w != nil {
			exp, err := json.Marshal(w)
			require.NoError(t, err)
			assert.JSONEq(t, string(exp), string(got), "%s's schema in tools/list", tool.Name)
			continue
		}
		// The management tools' schemas are their own, not the bare one go-sdk holds.
		assert.NotEqual(t, `{"type":"object"}`, string(got), "%s's schema in tools/list", tool.Name)
	}

	// Called by the client, which sends the headers the listed schemas ask for.
	for name, text := range map[string]string{"plain": "plain eu", "where": `where {"region":"eu"}`} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"region": "eu"}})
		require.NoError(t, err, name)
		require.False(t, res.IsError, "%s: %v", name, res.Content)
		assert.Equal(t, text, res.Content[0].(*mcp.TextContent).Text)
	}

	// Called without the Mcp-Param-Region header: go-sdk refuses the bound tool's call, and
	// not the other's.
	post := func(name string) (int, string) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"region":"eu"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(raw)
	}
	code, body := post("where")
	assert.Contains(t, body, "Mcp-Param-Region", "the bound tool's call without its header (%d)", code)
	assert.NotContains(t, body, "where {", "the bound tool ran")
	code, body = post("plain")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "plain eu")
}

// A tool added again by its name replaces the one before in tools/list, and the schema kept
// for the one replaced is dropped: a server that reloads its tools (elicitd on SIGHUP) keeps
// one per tool. A schema that is not an object's is still refused by go-sdk, as it was before
// go-sdk was given bare schemas.
func TestAToolAddedAgainIsListedAsAddedLast(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Clock: clock.NewMock()})
	defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()
	tool := ask.NewTool("plain", "Plain", "no header", func(_ context.Context, in whereIn) (ask.Text, error) {
		return ask.Text(in.Region), nil
	})
	var last *jsonschema.Schema
	for i := range 5 {
		last = ask.InputSchema[whereIn]()
		last.Description = fmt.Sprintf("version %d", i)
		el.Add(server, tool.WithInputSchema(last))
	}
	assert.Equal(t, 1, el.ListedSchemas(), "one schema kept for the one tool")
	bound := ask.InputSchema[whereIn]()
	bound.Properties["region"].Extra = map[string]any{"x-mcp-header": "Region"}
	el.Add(server, tool.WithInputSchema(bound))
	assert.Zero(t, el.ListedSchemas(), "a tool given to go-sdk in full needs none kept")
	el.Add(server, tool.WithInputSchema(last))

	cs := elicittest.Connect(t, server, elicittest.Pull).Session
	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)
	got, err := json.Marshal(list.Tools[0].InputSchema)
	require.NoError(t, err)
	want, err := json.Marshal(last)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))

	assert.PanicsWithError(t, `AddTool "text": input schema must have type "object" (got string)`, func() {
		el.Add(server, ask.NewTool("text", "", "", func(context.Context, string) (ask.Text, error) { return "", nil }))
	})
	assert.PanicsWithError(t, `AddTool "none": input schema must have type "object" (got <nil>)`, func() {
		el.Add(server, ask.NewTool("none", "", "", func(context.Context, whereIn) (ask.Text, error) { return "", nil }).WithInputSchema(nil))
	})
}

// A tool that el.Add added with a bare schema, replaced by one added to the server directly
// under its name, is listed as the server has it: the full schema el kept is the other
// tool's.
func TestAToolReplacedOutsideTheElicitorIsListedAsAdded(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Clock: clock.NewMock()})
	defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()
	el.Add(server, ask.NewTool("plain", "Plain", "no header", func(_ context.Context, in whereIn) (ask.Text, error) {
		return ask.Text(in.Region), nil
	}))
	own := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	server.AddTool(&mcp.Tool{Name: "plain", InputSchema: own}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})

	list, err := elicittest.Connect(t, server, elicittest.Pull).Session.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)
	got, err := json.Marshal(list.Tools[0].InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, string(own), string(got))
}
