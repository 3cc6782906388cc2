package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeFromEnv chooses what TestReadmeAsANewcomer follows the README in: unset (or
// "clone"), a fresh clone of the committed state, which is what a newcomer gets; "worktree",
// a copy of the working tree as a commit of everything in it would hold, so that changes to
// the README, demo.sh or the examples can be tried before they are committed.
const readmeFromEnv = "ELICIT_README_FROM"

// newcomerTree returns a directory holding the repository as a newcomer gets it: a fresh
// clone of the committed state, or with ELICIT_README_FROM=worktree the working tree's files
// a commit would hold.
func newcomerTree(t *testing.T) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err, "the README test follows the README from a fresh clone, so it runs in a git checkout")
	root := strings.TrimSpace(string(top))
	dir := filepath.Join(t.TempDir(), "elicitd")
	switch from := os.Getenv(readmeFromEnv); from {
	case "", "clone":
		out, err := exec.Command("git", "clone", "--quiet", root, dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
	case "worktree":
		t.Logf("%s=worktree: following the README in a copy of the working tree, not in a clone of the committed state", readmeFromEnv)
		copyWorktree(t, root, dir)
	default:
		t.Fatalf("%s=%q: use clone (the default) or worktree", readmeFromEnv, from)
	}
	return dir
}

// copyWorktree copies into dir the files of the working tree at root that a commit of
// everything would hold: tracked files that still exist, and untracked ones git does not
// ignore, each with its permissions (demo.sh must stay executable).
func copyWorktree(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	list, err := cmd.Output()
	require.NoError(t, err)
	for name := range strings.SplitSeq(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed as deleted
		}
		require.NoError(t, err)
		dst := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(target, dst))
			continue
		}
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, data, info.Mode().Perm()))
	}
}

// runLine runs one README command line with sh in dir and returns its stdout and stderr,
// failing the test if it does not succeed.
func runLine(t *testing.T, dir, line string) (stdout, stderr string) {
	t.Helper()
	return runLineEnv(t, dir, line, nil)
}

var shellBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// readmeCommands returns the command lines of the README's shell blocks, block by block.
func readmeCommands(t *testing.T, dir string) [][]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	var blocks [][]string
	for _, m := range shellBlock.FindAllStringSubmatch(string(readme), -1) {
		var lines []string
		for line := range strings.SplitSeq(strings.TrimSpace(m[1]), "\n") {
			lines = append(lines, strings.TrimSpace(line))
		}
		blocks = append(blocks, lines)
	}
	require.GreaterOrEqual(t, len(blocks), 2, "the README starts with its set-up commands, then the non-interactive run")
	return blocks
}

// The lines demo.sh writes on stderr while it works: on a terminal they share one status
// line, cleared before elicit draws its form.
const (
	demoBuilding = "building elicitd and elicit..."
	demoStarting = "starting..."
)

// TestReadmeAsANewcomer follows the README's first commands on a fresh clone, exactly as
// written: the main command (./demo.sh) interactively through a pseudo-terminal, and its
// --answers variant directly. The test command itself is what is running this. With
// ELICIT_README_FROM=worktree it follows them in the working tree instead (newcomerTree).
func TestReadmeAsANewcomer(t *testing.T) {
	dir := newcomerTree(t)
	blocks := readmeCommands(t, dir)
	setup := blocks[0]
	require.Len(t, setup, 2, "exactly two set-up commands at the top")
	assert.Equal(t, "go test -race -count=1 ./...", setup[1], "the second runs the tests as CI does")
	main := setup[0]
	require.Equal(t, "./demo.sh", main, "the first command is the demo script")
	require.Len(t, blocks[1], 1)
	scripted := blocks[1][0]
	require.True(t, strings.HasPrefix(scripted, main+" --answers examples/"), "the non-interactive run is the first command with scripted answers: %s", scripted)

	t.Run("scripted", func(t *testing.T) {
		stdout, stderr := runLine(t, dir, scripted)
		body := decodeOut(t, stdout)["request_body"].(map[string]any)["ShipmentRequest"].(map[string]any)
		shipment := body["Shipment"].(map[string]any)
		assert.Equal(t, "Atlanta", shipment["Shipper"].(map[string]any)["Address"].(map[string]any)["City"])
		// Without a terminal, demo.sh says what it does in plain lines, before elicit speaks.
		building, starting := strings.Index(stderr, demoBuilding+"\n"), strings.Index(stderr, demoStarting+"\n")
		asked := strings.Index(stderr, "Missing 3 required field(s) for shipment creation.")
		assert.True(t, building == 0 && building < starting && starting < asked, "stderr: %s", stderr)
		assert.NotContains(t, stderr, "\x1b", "no terminal escapes without a terminal")
	})

	t.Run("other non-interactive examples", func(t *testing.T) {
		var ran int
		for _, block := range blocks[2:] {
			for _, line := range block {
				if !strings.Contains(line, "./cmd/elicit ") || (!strings.Contains(line, "--answers") && !strings.Contains(line, " tools ")) {
					continue // interactive: the first command stands for them
				}
				ran++
				runLine(t, dir, line)
			}
		}
		assert.GreaterOrEqual(t, ran, 2, "the elicit section shows tools and a scripted ask_user")
	})

	t.Run("host setup", func(t *testing.T) { followHostSetup(t, dir, blocks) })

	t.Run("interactive", func(t *testing.T) {
		s := startScreen(t, dir, "sh", "-c", main)
		s.waitFor("Missing 3 required field(s) for shipment creation.")
		// While it built, the terminal said so; the status line is gone from the form's screen.
		s.mu.Lock()
		drawn, shown := s.drawn.String(), s.vt.String()
		s.mu.Unlock()
		assert.Contains(t, drawn, demoBuilding)
		assert.Contains(t, drawn, demoStarting)
		assert.Less(t, strings.Index(drawn, demoBuilding), strings.Index(drawn, demoStarting))
		assert.NotContains(t, shown, demoStarting)
		answers := map[string]string{"Shipper city *": "Atlanta", "Recipient name *": "Bob Smith", "Package weight (LBS) *": "5"}
		for n := len(answers); n > 0; n-- {
			// Answer whichever field has the focus, as a person reading the screen would.
			title := s.focusedTitle(answers)
			s.typeKeys(answers[title])
			s.waitFor("┃ > " + answers[title]) // what was typed is on screen
			if n == 3 {
				checkPicture(s, "../..", s.picture()) // the form as the README shows it
			}
			s.typeKeys(keyEnter)
			delete(answers, title)
		}
		s.waitFor("Sent.")
		code, stdout := s.wait()
		require.Equal(t, 0, code, s.text())
		shipment := decodeOut(t, stdout)["request_body"].(map[string]any)["ShipmentRequest"].(map[string]any)["Shipment"].(map[string]any)
		assert.Equal(t, "Bob Smith", shipment["ShipTo"].(map[string]any)["Name"])
		assert.Equal(t, "5", shipment["Package"].([]any)[0].(map[string]any)["PackageWeight"].(map[string]any)["Weight"])
	})
}

var (
	jsonBlock = regexp.MustCompile("(?s)```json\n(.*?)```")
	repoPath  = regexp.MustCompile("`((?:examples|docs|testdata)/[^`\\s]+|LICENSE)`")
)

// followHostSetup checks the host set-up section as far as it can run here: the install
// command installs both programs, the Claude Code command parses and names the installed
// elicitd, every JSON snippet parses (with the server under the key hosts expect), and every
// repository file the README names exists.
func followHostSetup(t *testing.T, dir string, blocks [][]string) {
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	var install, claude string
	for _, block := range blocks {
		for _, line := range block {
			switch {
			case strings.HasPrefix(line, "go install ./cmd/"):
				install = line
			case strings.HasPrefix(line, "claude mcp add "):
				claude = line
			}
		}
	}
	require.NotEmpty(t, install, "the README says how to install both programs")
	require.NotEmpty(t, claude, "the README has the Claude Code command")

	// Installed as written, into a GOPATH of the test's own (sharing the module cache).
	gopath := t.TempDir()
	env := []string{"GOPATH=" + gopath, "GOBIN=", "GOMODCACHE=" + goEnv(t, "GOMODCACHE"), "GOFLAGS=-mod=mod"}
	runLineEnv(t, dir, install, env)
	for _, bin := range []string{"elicitd", "elicit"} {
		assert.FileExists(t, filepath.Join(gopath, "bin", bin), "%s installs %s", install, bin)
	}
	out, err := exec.Command("sh", "-n", "-c", claude).CombinedOutput()
	require.NoError(t, err, "%s: %s", claude, out)
	// The path the command gives Claude Code is the elicitd just installed.
	server := regexp.MustCompile(` -- ("[^"]+"|\S+)`).FindStringSubmatch(claude)
	require.NotNil(t, server, "%s: the server command follows --", claude)
	resolved, _ := runLineEnv(t, dir, "printf %s "+server[1], env)
	assert.Equal(t, filepath.Join(gopath, "bin", "elicitd"), resolved)

	snippets := jsonBlock.FindAllStringSubmatch(string(readme), -1)
	require.GreaterOrEqual(t, len(snippets), 2)
	keys := map[string]bool{}
	for _, m := range snippets {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(m[1]), &v), "a JSON snippet in the README: %s", m[1])
		for k := range v {
			keys[k] = true
		}
	}
	assert.True(t, keys["servers"], "VS Code's format")
	assert.True(t, keys["mcpServers"], "Cursor's and Claude Desktop's format")

	for _, m := range repoPath.FindAllStringSubmatch(string(readme), -1) {
		_, err := os.Stat(filepath.Join(dir, m[1]))
		assert.NoError(t, err, "the README names %s", m[1])
	}
	for _, name := range []string{"vscode-mcp.json", "mcp-servers.json"} {
		data, err := os.ReadFile(filepath.Join(dir, "examples", "hosts", name))
		require.NoError(t, err)
		assert.Contains(t, string(readme), strings.TrimSpace(string(data)), "examples/hosts/%s is the README's snippet", name)
	}
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// runLineEnv is runLine with env added to the environment.
func runLineEnv(t *testing.T, dir, line string, env []string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*failsafe)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	require.NoError(t, err, "%s\nstderr: %s", line, errOut.String())
	return string(out), errOut.String()
}
