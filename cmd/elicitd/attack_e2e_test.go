package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peakRSS returns the peak resident memory of process pid, from /proc (VmHWM).
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// The flood that left 1.45 GB resident (12 forms with a 15 KB pattern) and 2.2 GB at default
// limits (20 calls): now every such form is refused before anything in it is compiled, the
// costliest forms the limits accept are cheap, and calls past the rate limit compile nothing.
func TestFormFloodStaysSmall(t *testing.T) {
	h := start(t, clientSetup{noMRTR: true, elicit: accept(map[string]any{"name": "A"})})
	ctx := timeout(t)
	exploding := strings.Repeat("(?:a?){1000}", 1250) // 15 KB
	for range 20 {
		out, isErr := h.call(t, ctx, "ask_user", map[string]any{"message": "m", "form": map[string]any{"fields": []any{
			map[string]any{"name": "p", "type": "text", "pattern": exploding}}}})
		require.True(t, isErr)
		assert.Equal(t, "INVALID_FORM", out["code"])
		assert.Contains(t, out["message"], "the limit is 1000")
	}
	// The costliest accepted: two patterns at the budget, and 98 fields of long help text.
	costly := func(i int) map[string]any {
		fields := []any{
			map[string]any{"name": "a", "type": "text", "pattern": fmt.Sprintf("(?:a?){650}b%d", i), "max_length": 1000},
			map[string]any{"name": "b", "type": "text", "pattern": "(?:b?){650}c", "max_length": 1000},
		}
		for j := range 98 {
			fields = append(fields, map[string]any{"name": fmt.Sprintf("f%d", j), "type": "text", "description": strings.Repeat("d", 550)})
		}
		return map[string]any{"message": "m", "form": map[string]any{"fields": fields}}
	}
	refused := 0
	for i := range 20 {
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: costly(i)})
		require.NoError(t, err)
		if len(res.InputRequests) > 0 {
			continue // asked: the question stays open
		}
		require.True(t, res.IsError)
		assert.Equal(t, "RATE_LIMITED", structured(t, res)["code"])
		refused++
	}
	assert.Equal(t, 10, refused, "the default burst is 10")
	peak := peakRSS(t, h.cmd.Process.Pid)
	t.Logf("peak RSS of elicitd after the flood: %.1f MiB", float64(peak)/(1<<20))
	assert.Less(t, peak, int64(400<<20))
}
