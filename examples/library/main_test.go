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

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// build builds the program once per test run, with the race detector when the tests run
// with it.
var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "library")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "library")
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

// syncBuffer is the program's stderr, written by the process's copier and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The program as its README shows it: built, run as a real stdio MCP server and driven by
// the go-sdk client in both eras. The person gives a name too short, then a good one; then
// declines. It logs each outcome, and exits cleanly when the client closes its stdin.
func TestTheProgramGreetsAndLogsEachOutcome(t *testing.T) {
	bin, err := build()
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			var mu sync.Mutex
			var prompts []*mcp.ElicitParams
			answers := []*mcp.ElicitResult{
				{Action: "accept", Content: map[string]any{"name": " A "}}, // long enough for the client, not once trimmed
				{Action: "accept", Content: map[string]any{"name": " Ada "}},
				{Action: "decline"},
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					prompts = append(prompts, req.Params)
					a := answers[0]
					answers = answers[1:]
					return a, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stderr := &syncBuffer{}
			cmd := exec.Command(bin)
			cmd.Stderr = stderr
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err)

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			assert.Equal(t, map[string]any{"text": "Hello, Ada!"}, payload(t, res))
			require.Len(t, prompts, 2)
			assert.Equal(t, "What should I call you?", prompts[0].Message)
			assert.Contains(t, prompts[1].Message, "Your name: must be at least 2 characters", "the re-prompt says what was wrong")

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			assert.Equal(t, "ELICITATION_DECLINED", payload(t, res)["code"])

			require.NoError(t, cs.Close(), "the program exits cleanly once its client has gone")
			logs := stderr.String()
			assert.Contains(t, logs, `msg="elicitation finished"`)
			assert.Contains(t, logs, "state=completed reason=\"\" attempts=2 rounds=2")
			assert.Contains(t, logs, "state=cancelled reason=declined attempts=1 rounds=1")
			assert.NotContains(t, logs, "Ada", "never what was typed")
			assert.NotContains(t, logs, "DATA RACE")
		})
	}
}

func payload(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var p map[string]any
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}
