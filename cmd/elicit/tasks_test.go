package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var taskLine = regexp.MustCompile(`made the call task (\S+); if elicit stops, go on with: elicit --url \S+ task resume (\S+)`)

// pendingIDs reads the ids elicit keeps for its unfinished tasks, in config.
func pendingIDs(t *testing.T, config string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(config, "elicit", "tasks", "*", "*"))
	require.NoError(t, err)
	var ids []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		ids = append(ids, string(data))
	}
	return ids
}

// elicit follows a call that became a task; stopped (--timeout here, Ctrl-C or a crash for
// a person), it keeps the task's id and says how to go on: "task resume ID" follows it to
// its result, "task cancel ID" cancels one, after which resuming it says so. --no-tasks
// makes the same call a plain one.
func TestTasksResumedAndCancelled(t *testing.T) {
	s := serveHTTPArgs(t, []string{"--http", "127.0.0.1:0", "--conformance-fixtures", "--rate", "0"})
	config := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + config}

	r := runElicitEnv(t, env, "--url", s.url, "--timeout", "1s", "call", "slow_compute", "--args", `{"seconds": 3, "label": "resumed"}`)
	require.Equal(t, 1, r.code, "stopped by --timeout: %s", r.stderr)
	m := taskLine.FindStringSubmatch(r.stderr)
	require.NotNil(t, m, "elicit says the call became a task: %s", r.stderr)
	id := m[1]
	require.Equal(t, id, m[2])
	assert.Equal(t, []string{id}, pendingIDs(t, config), "the unfinished task is kept")

	r = runElicitEnv(t, env, "--url", s.url, "task", "resume", id)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "computed resumed in 3s")
	assert.Empty(t, pendingIDs(t, config), "a finished task is no longer kept")

	r = runElicitEnv(t, env, "--url", s.url, "--timeout", "1s", "call", "slow_compute", "--args", `{"seconds": 60, "label": "cancelled"}`)
	require.Equal(t, 1, r.code)
	m = taskLine.FindStringSubmatch(r.stderr)
	require.NotNil(t, m, "%s", r.stderr)
	r = runElicitEnv(t, env, "--url", s.url, "task", "cancel", m[1])
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.Empty(t, pendingIDs(t, config))
	r = runElicitEnv(t, env, "--url", s.url, "task", "resume", m[1])
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "was cancelled")

	r = runElicitEnv(t, env, "--url", s.url, "task", "resume", "NOSUCHTASK")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "NOSUCHTASK")

	answers := writeFile(t, "answers.json", `[{"weight": "2.5"}]`)
	r = runElicitEnv(t, env, "--url", s.url, "--no-tasks", "--answers", answers, "call", "ask_user", "--args", weightArgs)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	assert.NotContains(t, r.stderr, "made the call task", "--no-tasks: a plain call")
	assert.Contains(t, r.stdout, `"completed"`)

	for _, bad := range [][]string{{"task", "resume"}, {"task", "stop", "X"}, {"task", "resume", "a b"}} {
		r = runElicitEnv(t, env, append([]string{"--url", s.url}, bad...)...)
		assert.Equal(t, 2, r.code, "%v: %s", bad, r.stderr)
	}
	r = runElicitEnv(t, env, "task", "resume", "X", "--", "elicitd")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "task needs --url")
}

// Several elicits following tasks of one server at once (one per terminal, say) keep every
// task's id: none is lost to another's write of the same list.
func TestPendingTasksKeptByConcurrentElicits(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	c := &client{inv: &invocation{url: "http://127.0.0.1:1/mcp"}}
	var wg sync.WaitGroup
	var want []string
	for i := range 40 {
		id := fmt.Sprintf("TASK%02d", i)
		want = append(want, id)
		wg.Go(func() { c.pending().add(id) })
	}
	wg.Wait()
	assert.ElementsMatch(t, want, pendingIDs(t, config), "every id kept")
	for _, id := range want[:20] {
		wg.Go(func() { c.pending().remove(id) })
	}
	wg.Wait()
	assert.ElementsMatch(t, want[20:], pendingIDs(t, config), "only the removed ones gone")
}
