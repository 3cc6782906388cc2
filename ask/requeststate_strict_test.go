package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/validator"
)

// cityForm asks one required field, "city".
var cityForm = func() *validator.Compiled {
	f, err := validator.Compile(validator.Form{Fields: []validator.Field{
		{Name: "city", Type: validator.Text, Label: "City", Required: true},
	}})
	if err != nil {
		panic(err)
	}
	return f
}()

// cityServer is a server with an Elicitor on a mock clock and the tool "where", which asks
// cityForm and returns the answers.
func cityServer(t *testing.T) (*Elicitor, *mcp.Server) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := New(server, Options{Clock: clock.NewMock(), Timeout: time.Minute, PullIdle: -1})
	t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
	el.Add(server, RawTool[struct{}]("where", "", "asks a city", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return Ask(ctx, Question{Message: "Which city?", Form: cityForm})
	}))
	return el, server
}

// respellings returns tok spelled otherwise: with whitespace before, after or inside either
// half, with base64 padding, or with another separator. None is the token as issued.
func respellings(tok string) map[string]string {
	payload, mac, _ := strings.Cut(tok, ".")
	mid := func(s, c string) string { return s[:len(s)/2] + c + s[len(s)/2:] }
	out := map[string]string{
		"leading space":        " " + tok,
		"leading newline":      "\n" + tok,
		"trailing newline":     tok + "\n",
		"trailing CRLF":        tok + "\r\n",
		"trailing CR":          tok + "\r",
		"trailing space":       tok + " ",
		"trailing tab":         tok + "\t",
		"trailing NUL":         tok + "\x00",
		"newline in the mac":   payload + "." + mid(mac, "\n"),
		"CR in the mac":        payload + "." + mid(mac, "\r"),
		"space in the mac":     payload + "." + mid(mac, " "),
		"tab in the mac":       payload + "." + mid(mac, "\t"),
		"newline in payload":   mid(payload, "\n") + "." + mac,
		"space in the payload": mid(payload, " ") + "." + mac,
		"newline before dot":   payload + "\n." + mac,
		"newline after dot":    payload + ".\n" + mac,
		"space around the dot": payload + " . " + mac,
		"padded mac":           payload + "." + mac + "=",
		"padded mac twice":     payload + "." + mac + "==",
		"padded payload":       payload + "=." + mac,
		"second dot":           tok + ".",
	}
	if std := strings.NewReplacer("-", "+", "_", "/").Replace(mac); std != mac {
		out["standard alphabet mac"] = payload + "." + std
	}
	for _, c := range []string{"\n", "\r", " ", "\t"} {
		out[fmt.Sprintf("%q after each character of the mac", c)] = payload + "." + strings.Join(strings.Split(mac, ""), c)
	}
	return out
}

// A token opens only spelled exactly as it was issued: whitespace anywhere (the base64
// decoder skips CR and LF), padding or another alphabet is refused as an altered token is.
func TestStateTokensOpenOnlyAsIssued(t *testing.T) {
	s := newStateSigner([]byte(strings.Repeat("k", 32)))
	st := requestState{ID: "E1", Owner: "O1", Tool: "ask_user", Round: 1, Expires: 1000}
	tok := s.sign(st)
	got, err := s.open(tok)
	require.NoError(t, err)
	require.Equal(t, st, got)
	for name, bad := range respellings(tok) {
		require.NotEqual(t, tok, bad, name)
		got, err := s.open(bad)
		assert.ErrorIs(t, err, errBadState, "%s: %q opened as %+v", name, bad, got)
	}
}

// Through a pull-era client: a retry whose requestState is respelled hears "forged", as an
// altered one does, and the question is untouched by it: the token as issued still answers.
// A state that fails its integrity check is refused with a JSON-RPC error (invalid params,
// -32602), as SEP-2322 and the MCP conformance suite's input-required-result-tampered-state
// ask, its data elicitd's error payload; not as a tool result a client could read as the
// call's.
func TestRespelledRequestStateIsForgedOverTheWire(t *testing.T) {
	_, server := cityServer(t)
	u := elicittest.Connect(t, server, elicittest.Pull)
	ctx := context.Background()
	first, err := u.Session.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.NotEmpty(t, first.InputRequests, "the first round is out")
	require.NotEmpty(t, first.RequestState)

	call := func(state string) (*mcp.CallToolResult, error) {
		t.Helper()
		return u.Session.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{}, RequestState: state,
			InputResponses: mcp.InputResponseMap{inputKey(1): &mcp.ElicitResult{Action: "accept", Content: map[string]any{"city": "Oslo"}}}})
	}
	for name, bad := range respellings(first.RequestState) {
		_, err := call(bad)
		var we *jsonrpc.Error
		require.ErrorAs(t, err, &we, "%s: a JSON-RPC error", name)
		assert.EqualValues(t, jsonrpc.CodeInvalidParams, we.Code, name)
		assert.True(t, strings.HasPrefix(we.Message, CodeInvalidRequestState+": "), "%s: %s", name, we.Message)
		var p map[string]any
		require.NoError(t, json.Unmarshal(we.Data, &p), name)
		assert.Equal(t, CodeInvalidRequestState, p["code"], name)
		assert.Equal(t, "forged", p["reason"], name)
	}
	res, err := call(first.RequestState)
	require.NoError(t, err)
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	assert.Equal(t, "Oslo", p["city"], "the token as issued still answers the question: %v", p)
}
