package ask_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
)

// Over Streamable HTTP, a push-era call whose POST's connection drops while its session
// stays open ends its question client_gone; the mock clock never moves, so the deadline has
// no part in it. A call whose stream stays is answered as usual on the same session.
func TestWatchStreamsEndsTheQuestionsOfADroppedStream(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Clock: clock.NewMock()})
	outcomes := make(chan elicitation.Outcome, 2)
	ask.AddTool(el, server, &mcp.Tool{Name: "book"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		o, err := ask.Outcome(ctx, ask.Question{Message: "m", Form: bookingForm.Compiled()})
		if !assert.NoError(t, err) {
			return nil, nil, err
		}
		outcomes <- o
		return nil, nil, nil
	})
	hs := httptest.NewServer(el.WatchStreams(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	defer hs.Close()
	defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), failsafeBound)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()

	cut, drop := context.WithCancel(ctx)
	defer drop()
	req, err := http.NewRequestWithContext(cut, http.MethodPost, hs.URL,
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"book","arguments":{}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"elicitation/create"`) {
	}
	require.Contains(t, sc.Text(), `"elicitation/create"`, "the question is out on the call's stream")
	drop()
	_ = res.Body.Close()
	var o elicitation.Outcome
	select {
	case o = <-outcomes:
	case <-ctx.Done():
		t.Fatal("the question outlived its dropped stream")
	}
	assert.Equal(t, elicitation.Cancelled, o.State)
	assert.Equal(t, elicitation.ClientGone, o.Reason)

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "book", Arguments: map[string]any{}})
	require.NoError(t, err)
	o = <-outcomes
	assert.Equal(t, elicitation.Declined, o.Reason, "a stream that stays is answered: %+v", o)
}
