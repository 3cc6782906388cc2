package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// binDir holds the built server for the whole test run; TestMain removes it at the end.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "booking")
	if err != nil {
		panic(err)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// build builds the example server once per test run.
var build = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "booking")
	args := append(append([]string{"build"}, raceBuild...), "-o", bin, ".")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// The example built and run as a real stdio MCP server, driven by the go-sdk client in
// both eras: a typed form, a follow-up round for a conditional field, the typed answer, and
// a decline as the error payload.
func TestBookingServerEndToEnd(t *testing.T) {
	bin, err := build()
	require.NoError(t, err)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			var prompts []*mcp.ElicitParams
			var mu sync.Mutex
			decline := false
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					prompts = append(prompts, req.Params)
					switch {
					case decline:
						return &mcp.ElicitResult{Action: "decline"}, nil
					case len(prompts) == 1:
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{
							"name": "Ada", "guests": 4, "when": "2026-12-24T19:30:00Z", "occasion": "other"}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"details": "Anniversary"}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stderr := &strings.Builder{}
			cmd := exec.Command(bin)
			cmd.Stderr = stderr
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err)
			defer func() {
				require.NoError(t, cs.Close())
				assert.NotContains(t, stderr.String(), "DATA RACE")
				assert.True(t, strings.HasPrefix(stderr.String(), "booking: an MCP server on stdio with one tool, book_table"),
					"started, it first says what it is: %q", stderr.String())
				assert.Contains(t, stderr.String(), "\n  "+Drive+"\n", "and how to drive it")
			}()

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "book_table", Arguments: map[string]any{"restaurant": "Chez Nous"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			var out Out
			raw, _ := json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(raw, &out))
			assert.Equal(t, "Table for 4 at Chez Nous, in the name of Ada, on Thu 24 Dec 2026 19:30 UTC (inside)", out.Confirmation)
			assert.Equal(t, "Anniversary", out.Booking.Details)
			require.Len(t, prompts, 2)
			assert.Contains(t, prompts[0].Message, "Chez Nous")
			assert.Contains(t, string(mustJSON(t, prompts[1].RequestedSchema)), `"details"`)
			assert.NotContains(t, string(mustJSON(t, prompts[1].RequestedSchema)), `"name"`, "the follow-up asks only the conditional field")

			mu.Lock()
			decline = true
			mu.Unlock()
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "book_table", Arguments: map[string]any{"restaurant": "Chez Nous"}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			var payload map[string]any
			raw, _ = json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(raw, &payload))
			assert.Equal(t, "ELICITATION_DECLINED", payload["code"])
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// The confirmation puts the restaurant where the table is and the name as whom it is for,
// whatever the values (issue #29: the name once went where the restaurant belongs).
func TestConfirmationWording(t *testing.T) {
	when := time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
	got := confirmation("Ada", Booking{Name: "Chez Nous", Guests: 2, When: when, Seating: "terrace"})
	assert.Equal(t, "Table for 2 at Ada, in the name of Chez Nous, on Thu 5 Mar 2026 12:00 UTC (terrace)", got)
}

// Started by hand, the server says what it is and how to drive it, on stderr only: stdout is
// MCP's, and stays empty until a client speaks.
func TestStartedAloneItSaysWhatItIs(t *testing.T) {
	bin, err := build()
	require.NoError(t, err)
	cmd := exec.Command(bin) // stdin is empty: the server reads EOF and exits
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Empty(t, stdout.String())
	var greeting strings.Builder
	greet(&greeting)
	assert.Equal(t, greeting.String(), stderr.String())
	assert.Contains(t, greeting.String(), "book_table")
	assert.Contains(t, greeting.String(), Drive)
}
