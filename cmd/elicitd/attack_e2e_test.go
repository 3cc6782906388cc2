package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peakRSS returns the peak resident memory of process pid, from /proc (VmHWM).
func peakRSS(t testing.TB, pid int) int64 {
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

// Each bad setting is one line naming the setting and what it accepts, with exit status 2;
// --version works whatever else is set.
func TestSettingsSayNoClearly(t *testing.T) {
	run := func(env []string, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Stdin = strings.NewReader("")
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return code, stdout.String(), stderr.String()
	}
	for _, tc := range []struct {
		env  []string
		args []string
		says string
	}{
		{[]string{"UPS_ENVIRONMENT=prod"}, nil, `UPS_ENVIRONMENT must be "test" (or "cie") or "production", got "prod"`},
		{[]string{"UPS_ENVIRONMENT=bogus"}, nil, `got "bogus"`},
		{[]string{"UPS_BASE_URL=notaurl"}, nil, `UPS_BASE_URL must be an https:// URL`},
		{nil, []string{"--conformance-fixtures=maybe"}, `invalid boolean value "maybe" for -conformance-fixtures`},
		{nil, []string{"--nope"}, `flag provided but not defined: -nope`},
		{nil, []string{"--max-answer-bytes", "67108864"}, `--max-answer-bytes must be a whole number between 1024 and`},
	} {
		code, _, stderr := run(tc.env, tc.args...)
		assert.Equal(t, 2, code, "%v %v", tc.env, tc.args)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		assert.Contains(t, stderr, tc.says)
		assert.True(t, strings.HasPrefix(stderr, "elicitd: "), stderr)
	}
	code, stdout, _ := run([]string{"UPS_ENVIRONMENT=bogus", "ELICITD_TIMEOUT=forever"}, "--version")
	assert.Equal(t, 0, code, "--version works whatever the rest says")
	assert.True(t, strings.HasPrefix(stdout, "elicitd "), stdout)
	code, _, stderr := run(nil, "-help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-timeout")
}
