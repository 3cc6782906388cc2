package bare_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Over Streamable HTTP, ask_person is answered in both eras: on a session with Elicit
// (push), and statelessly with input requests and a retry, which the client makes itself (pull).
func TestHandlerAsksInBothEras(t *testing.T) {
	srv := httptest.NewServer(bare.Handler())
	t.Cleanup(srv.Close)
	for _, era := range []struct{ name, version string }{{"push", "2025-11-25"}, {"pull", "2026-07-28"}} {
		t.Run(era.name, func(t *testing.T) {
			asked := 0
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					assert.Contains(t, string(mustJSON(t, req.Params.RequestedSchema)), `"email"`)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 36, "email": "ada@example.com"}}, nil
				}})
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a failsafe, for a loaded machine
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true,
				HTTPClient: &http.Client{Transport: tr}}, &mcp.ClientSessionOptions{ProtocolVersion: era.version})
			require.NoError(t, err)
			defer cs.Close()
			require.Equal(t, era.version, cs.InitializeResult().ProtocolVersion)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_person"})
			require.NoError(t, err)
			require.False(t, res.IsError, "%+v", res.Content)
			require.Len(t, res.Content, 1)
			assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"email":"ada@example.com"`)
			assert.Equal(t, 1, asked)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
