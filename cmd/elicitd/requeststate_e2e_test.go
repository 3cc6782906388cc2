package main

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A requestState is good for one call: two resumes sent together with one state never both go
// on (before, both completed in 17 of 500 trials and the second got the first one's answer).
func TestRequestStateIsSingleUse(t *testing.T) {
	h := start(t, clientSetup{noMRTR: true, args: []string{"--rate", "0"}, elicit: accept(map[string]any{"name": "A"})})
	ctx := timeout(t)
	args := map[string]any{"message": "m", "form": nameForm}
	for trial := range 100 {
		first, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args})
		require.NoError(t, err)
		require.True(t, first.NeedsInput())
		outs := make([]map[string]any, 2)
		var wg sync.WaitGroup
		for i, name := range []string{"Ada", "Bob"} {
			wg.Go(func() {
				res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args, RequestState: first.RequestState,
					InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}}})
				if !assert.NoError(t, err) {
					return
				}
				outs[i] = structured(t, res)
			})
		}
		wg.Wait()
		completed := 0
		for i, out := range outs {
			switch out["status"] {
			case "completed":
				completed++
				assert.Equal(t, []string{"Ada", "Bob"}[i], out["data"].(map[string]any)["name"], "each caller gets its own answer")
			default:
				assert.Equal(t, "INVALID_REQUEST_STATE", out["code"], "%v", out)
			}
		}
		require.Equal(t, 1, completed, "trial %d: exactly one resume goes on: %v", trial, outs)
	}
}

// A pull-era client that never comes back holds no slot until the question's deadline: the
// round's idle expiry ends the question as abandoned.
func TestAbandonedPullRoundEnds(t *testing.T) {
	h := start(t, clientSetup{noMRTR: true, args: []string{"--pull-idle", "1s", "--timeout", "1h"}, elicit: accept(map[string]any{"name": "A"})})
	ctx := timeout(t)
	first, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	require.Eventually(t, func() bool { return strings.Contains(h.stderr.String(), "reason=abandoned") }, failsafe, 20*time.Millisecond)
	out, isErr := h.call(t, ctx, "list_elicitations", nil)
	require.False(t, isErr)
	assert.Empty(t, out["elicitations"])
}

// The wire form of an input_required result carries no "content" (the SDK wrote null).
func TestInputRequiredHasNoContentField(t *testing.T) {
	var wire bytes.Buffer
	var mu sync.Mutex
	h := start(t, clientSetup{noMRTR: true, pipes: true, elicit: accept(map[string]any{"name": "A"}),
		tee: func(r io.Reader) io.Reader {
			pr, pw := io.Pipe()
			go func() {
				sc := bufio.NewScanner(r)
				sc.Buffer(nil, 32<<20)
				for sc.Scan() {
					mu.Lock()
					wire.Write(sc.Bytes())
					wire.WriteByte('\n')
					mu.Unlock()
					if _, err := pw.Write(append(sc.Bytes(), '\n')); err != nil {
						return
					}
				}
				pw.CloseWithError(sc.Err())
			}()
			return pr
		}})
	first, err := h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": "m", "form": nameForm}})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())
	mu.Lock()
	defer mu.Unlock()
	var line string
	for _, l := range strings.Split(wire.String(), "\n") {
		if strings.Contains(l, `"inputRequests"`) {
			line = l
		}
	}
	require.NotEmpty(t, line)
	assert.NotContains(t, line, `"content"`)
	assert.Contains(t, line, `"resultType":"input_required"`)
}
