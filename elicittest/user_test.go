package elicittest_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	v "github.com/elicitd/elicitd/validator"
)

// An OnPage step given a form prompt fails the test (here, a recorder) and cancels the
// prompt, rather than opening nothing and accepting.
func TestOnPageRefusesAFormPrompt(t *testing.T) {
	form, err := v.Compile(v.Form{Fields: []v.Field{{Name: "name", Type: v.Text, Required: true}}})
	require.NoError(t, err)
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			ask.AddTool(el, server, &mcp.Tool{Name: "who"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				_, err := ask.Ask(ctx, ask.Question{Message: "Who?", Form: form})
				return nil, nil, err
			})
			rec := &recorder{TB: t}
			opened := false
			u := elicittest.ConnectURL(rec, server, era, elicittest.OnPage(func(string) { opened = true }))
			res := u.Call(context.Background(), "who", map[string]any{})
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, ask.CodeCancelled, p["code"])
			assert.Equal(t, 1, rec.failed)
			assert.False(t, opened)
		})
	}
}
