// Package examples_test follows examples/README.md: every example has an entry, every
// command in it runs as written (the interactive ones through their --answers variant), and
// each run's output shows what its entry promises.
package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// root is the repository root: the README's commands run from there.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "go.mod"))
	return dir
}

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "examples", "README.md"))
	require.NoError(t, err)
	return string(b)
}

var shellBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// commands returns the README's command lines, in order.
func commands(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, m := range shellBlock.FindAllStringSubmatch(readme(t), -1) {
		for line := range strings.SplitSeq(m[1], "\n") {
			if line = strings.TrimSpace(line); line != "" {
				lines = append(lines, line)
			}
		}
	}
	require.NotEmpty(t, lines, "examples/README.md has ```sh blocks")
	return lines
}

// Every example in the directory, program or file, has its place in the README.
func TestEveryExampleIsInTheReadme(t *testing.T) {
	text := readme(t)
	dir := filepath.Join(root(t), "examples")
	var examples []string
	for _, pattern := range []string{"*/main.go", "*.json", "*/*.json"} {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		for _, m := range matches {
			rel, _ := filepath.Rel(filepath.Dir(dir), m)
			examples = append(examples, filepath.ToSlash(rel))
		}
	}
	require.Contains(t, examples, "examples/booking/main.go", "the listing saw the examples")
	for _, e := range examples {
		assert.Contains(t, text, "`"+e+"`", "examples/README.md names %s", e)
	}
	for _, c := range commands(t) {
		for _, m := range regexp.MustCompile(`(?:@|--answers )(examples/\S+)`).FindAllStringSubmatch(c, -1) {
			assert.FileExists(t, filepath.Join(root(t), m[1]), "%s", c)
		}
	}
}

// scripted reports whether line answers from a file; interactive whether it asks the
// person at the terminal.
func scripted(line string) bool    { return strings.Contains(line, " --answers ") }
func interactive(line string) bool { return strings.Contains(line, " call ") && !scripted(line) }

// unscripted is line without its --answers and --protocol flags: the interactive command a
// scripted one stands for.
func unscripted(line string) string {
	return regexp.MustCompile(` --(?:answers|protocol) \S+`).ReplaceAllString(line, "")
}

// onThePage are the interactive commands whose answers are typed on elicitd's page, in a
// browser, so that no --answers file can give them; the example's own test drives the page.
var onThePage = map[string]string{
	"go run ./cmd/elicit call connect_account -- go run ./examples/library-pages": "examples/library-pages/main_test.go",
}

// An interactive command cannot run here; the same command with --answers can, and stands
// for it (or, for a question asked on the page, the example's own test).
func TestEveryInteractiveCommandHasAScriptedVariant(t *testing.T) {
	lines := commands(t)
	stands := map[string]bool{}
	for _, line := range lines {
		if scripted(line) {
			stands[unscripted(line)] = true
		}
	}
	n := 0
	for _, line := range lines {
		if !interactive(line) {
			continue
		}
		n++
		if test, ok := onThePage[line]; ok {
			assert.False(t, stands[line], "%q has a scripted variant: drop it from onThePage", line)
			b, err := os.ReadFile(filepath.Join(root(t), test))
			require.NoError(t, err, "%q is covered by %s", line, test)
			assert.Contains(t, string(b), "func Test", "%s tests the example", test)
			continue
		}
		assert.True(t, stands[line], "%q has no --answers variant in examples/README.md", line)
	}
	for line := range onThePage {
		assert.Contains(t, lines, line, "onThePage names a command examples/README.md no longer has")
	}
	assert.GreaterOrEqual(t, n, 3, "booking, ask_user and create_shipment each have an interactive command")
}

// goRun matches the programs the README's commands run: go run ./cmd/... or ./examples/....
var goRun = regexp.MustCompile(`\bgo run (\./[\w./-]+)`)

// buildAll builds every package the lines go run, once, and returns the binary of each.
func buildAll(t *testing.T, lines []string) map[string]string {
	t.Helper()
	bins := map[string]string{}
	dir := t.TempDir()
	for _, line := range lines {
		for _, m := range goRun.FindAllStringSubmatch(line, -1) {
			bins[m[1]] = filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(m[1], "./"), "/", "_"))
		}
	}
	top := root(t)
	var g errgroup.Group
	for _, pkg := range slices.Sorted(maps.Keys(bins)) {
		g.Go(func() error {
			args := append(append([]string{"build"}, raceBuild...), "-o", bins[pkg], pkg)
			cmd := exec.Command("go", args...)
			cmd.Dir = top
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	return bins
}

// result is one README command's run.
type result struct {
	line           string
	stdout, stderr string
}

// run runs line with sh from the repository root, each go run replaced by the binary it
// builds, with nothing on stdin; it fails the test unless the command succeeds.
func run(t *testing.T, bins map[string]string, line string) result {
	t.Helper()
	shell := goRun.ReplaceAllStringFunc(line, func(s string) string {
		return "'" + bins[goRun.FindStringSubmatch(s)[1]] + "'"
	})
	require.NotContains(t, shell, "go run", "every go run was replaced by its binary")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", shell)
	cmd.Dir = root(t)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s\nstdout: %s\nstderr: %s", line, stdout.String(), stderr.String())
	assert.NotContains(t, stderr.String(), "DATA RACE")
	return result{line, stdout.String(), stderr.String()}
}

// promise is what a kind of README command shows when it runs.
type promise struct {
	name  string
	match func(line string) bool
	check func(t *testing.T, r result, all []string)
}

var promises = []promise{
	{"the engine walks one elicitation to its outcome",
		func(line string) bool { return line == "go run ./examples/engine" },
		func(t *testing.T, r result, _ []string) {
			assert.True(t, strings.HasPrefix(r.stdout, "engine: one elicitation walked through"), "it first says what it shows: %q", r.stdout)
			assert.Contains(t, r.stdout, "attempt 2 of 3: \"Package weight (kg): must be a positive, finite number")
			assert.Contains(t, r.stdout, "outcome: completed after 2 attempts")
		}},
	{"booking started alone says what it is and how to drive it",
		func(line string) bool { return line == "go run ./examples/booking" },
		func(t *testing.T, r result, all []string) {
			assert.Empty(t, r.stdout, "stdout is MCP's")
			assert.True(t, strings.HasPrefix(r.stderr, "booking: an MCP server on stdio with one tool, book_table"), "%q", r.stderr)
			drive := slices.IndexFunc(all, func(c string) bool {
				return interactive(c) && strings.Contains(c, "./examples/booking") && strings.Contains(r.stderr, "\n  "+c+"\n")
			})
			assert.GreaterOrEqual(t, drive, 0, "the command it suggests is the README's: %q", r.stderr)
		}},
	{"book_table asks, follows up, and confirms the booking",
		func(line string) bool { return scripted(line) && strings.Contains(line, " call book_table ") },
		func(t *testing.T, r result, _ []string) {
			answers := scriptOf(t, r)
			var out struct {
				Confirmation string
				Booking      map[string]any
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
			restaurant := argsOf(t, r)["restaurant"]
			assert.True(t, strings.HasPrefix(out.Confirmation, fmt.Sprintf("Table for %v at %s, in the name of %s, on ",
				answers[0]["guests"], restaurant, answers[0]["name"])), "the confirmation: %q", out.Confirmation)
			for _, a := range answers {
				for k, v := range a {
					assert.EqualValues(t, v, out.Booking[k], "the booking's %s is the scripted one", k)
				}
			}
		}},
	{"greet asks again for a name too short, then greets the person",
		func(line string) bool { return scripted(line) && strings.Contains(line, " call greet ") },
		func(t *testing.T, r result, _ []string) {
			answers := scriptOf(t, r)
			var out struct{ Text string }
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
			assert.Equal(t, fmt.Sprintf("Hello, %s!", answers[len(answers)-1]["name"]), out.Text)
			assert.Contains(t, r.stderr, "must be at least 2 characters", "the first name is refused")
		}},
	{"ask_user returns every field of the form, after a re-prompt",
		func(line string) bool { return scripted(line) && strings.Contains(line, " call ask_user ") },
		func(t *testing.T, r result, _ []string) {
			var form struct {
				Form struct{ Fields []struct{ Name string } }
			}
			raw, _ := json.Marshal(argsOf(t, r))
			require.NoError(t, json.Unmarshal(raw, &form))
			var asked []string
			for _, f := range form.Form.Fields {
				asked = append(asked, f.Name)
			}
			var out struct {
				Status   string
				Attempts int
				Data     map[string]any
			}
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
			assert.Equal(t, "completed", out.Status)
			assert.Equal(t, 2, out.Attempts, "the first answer is refused, the second taken")
			assert.ElementsMatch(t, asked, slices.Collect(maps.Keys(out.Data)), "the result has every field the form asks, and only those")
			for i, a := range scriptOf(t, r) {
				for k := range a {
					assert.Contains(t, out.Data, k, "scripted answer %d's %s is in the result, not dropped", i+1, k)
				}
			}
		}},
	{"create_shipment asks only for what is missing and completes the request",
		func(line string) bool { return scripted(line) && strings.Contains(line, " call create_shipment ") },
		func(t *testing.T, r result, _ []string) {
			assert.Contains(t, r.stderr, "Missing 3 required field(s) for shipment creation.")
			var out map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
			assert.ElementsMatch(t, []string{"endpoint", "request_body"}, slices.Collect(maps.Keys(out)),
				"a dry run's result: what would be sent, and where; nothing is sent to UPS")
			body, _ := json.Marshal(out["request_body"])
			for _, a := range scriptOf(t, r) {
				for k, v := range a {
					value, _ := json.Marshal(v)
					assert.Contains(t, string(body), string(value), "the request holds the scripted %s", k)
				}
			}
		}},
	{"elicitd, started as a host file says, lists its tools",
		func(line string) bool { return strings.Contains(line, "./cmd/elicit tools -- go run ./cmd/elicitd") },
		func(t *testing.T, r result, _ []string) {
			for _, tool := range []string{"ask_user", "create_shipment", "rate_shipment"} {
				assert.Contains(t, r.stdout, tool+"\n")
			}
		}},
}

// scriptOf reads the --answers file of r's command: its entries, in order. It also checks
// the run used each entry, and no more: a scripted run goes as its file says.
func scriptOf(t *testing.T, r result) []map[string]any {
	t.Helper()
	m := regexp.MustCompile(` --answers (\S+)`).FindStringSubmatch(r.line)
	require.NotNil(t, m)
	b, err := os.ReadFile(filepath.Join(root(t), m[1]))
	require.NoError(t, err)
	var entries []map[string]any
	require.NoError(t, json.Unmarshal(b, &entries))
	require.NotEmpty(t, entries)
	for i := range entries {
		assert.Contains(t, r.stderr, fmt.Sprintf("scripted answer %d: accept", i+1))
	}
	assert.NotContains(t, r.stderr, fmt.Sprintf("asks (question %d)", len(entries)+1), "the script has one entry a question")
	assert.NotContains(t, r.stderr, "does not fit the form")
	return entries
}

// argsOf reads the tool arguments of r's command: --args JSON or --args @file.
func argsOf(t *testing.T, r result) map[string]any {
	t.Helper()
	m := regexp.MustCompile(` --args (@\S+|'[^']*')`).FindStringSubmatch(r.line)
	require.NotNil(t, m, r.line)
	raw := []byte(strings.Trim(m[1], "'"))
	if name, ok := strings.CutPrefix(m[1], "@"); ok {
		var err error
		raw, err = os.ReadFile(filepath.Join(root(t), name))
		require.NoError(t, err)
	}
	var args map[string]any
	require.NoError(t, json.Unmarshal(raw, &args))
	return args
}

// TestTheReadmeCommandsDoWhatTheySay runs every command of examples/README.md that needs no
// terminal, each kept to the promise its kind makes; every promise is kept by some command.
func TestTheReadmeCommandsDoWhatTheySay(t *testing.T) {
	lines := commands(t)
	bins := buildAll(t, lines)
	kept := map[string]int{}
	var mu sync.Mutex
	for _, line := range lines {
		if interactive(line) {
			continue // TestEveryInteractiveCommandHasAScriptedVariant: its variant runs
		}
		var matched []promise
		for _, p := range promises {
			if p.match(line) {
				matched = append(matched, p)
			}
		}
		require.Len(t, matched, 1, "%q: each command is one kind of example this test knows", line)
		p := matched[0]
		t.Run(line, func(t *testing.T) {
			t.Parallel()
			p.check(t, run(t, bins, line), lines)
			mu.Lock()
			kept[p.name]++
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		for _, p := range promises {
			assert.Positive(t, kept[p.name], "no command in examples/README.md shows that %s", p.name)
		}
	})
}

// Each host file's entry is what one README command starts: the same arguments and
// environment, so the command shows what the host will get.
func TestEachHostFileHasItsCommand(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root(t), "examples", "hosts", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	var started []string
	for _, line := range commands(t) {
		env, cmd, ok := strings.Cut(line, "go run ./cmd/elicit tools -- go run ./cmd/elicitd")
		if !ok {
			continue
		}
		started = append(started, strings.Join(append(strings.Fields(env), strings.Fields(cmd)...), " "))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var conf map[string]map[string]struct {
			Command string
			Args    []string
			Env     map[string]string
		}
		require.NoError(t, json.Unmarshal(b, &conf))
		require.Len(t, conf, 1, "%s: one format key", f)
		for _, servers := range conf {
			entry, ok := servers["elicitd"]
			require.True(t, ok, "%s names the server elicitd", f)
			assert.Equal(t, "elicitd", filepath.Base(entry.Command))
			var want []string
			for _, k := range slices.Sorted(maps.Keys(entry.Env)) {
				want = append(want, k+"="+entry.Env[k])
			}
			want = append(want, entry.Args...)
			assert.Contains(t, started, strings.Join(want, " "), "%s: a README command starts elicitd as the host will", filepath.Base(f))
		}
	}
}
