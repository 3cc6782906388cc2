package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The binaries under test, built once: elicit and the elicitd server it drives.
var elicitBin, elicitdBin string

func TestMain(m *testing.M) {
	if fields := os.Getenv("ELICIT_TEST_BROWSER"); fields != "" && len(os.Args) == 2 {
		os.Exit(testBrowser(os.Args[1], fields)) // started by elicit --open as $BROWSER
	}
	if os.Getenv(signInBrowserEnv) != "" && len(os.Args) == 2 {
		os.Exit(signInBrowser(os.Args[1])) // started by elicit as $BROWSER to sign in
	}
	dir, err := os.MkdirTemp("", "elicit-e2e")
	if err != nil {
		panic(err)
	}
	elicitBin, elicitdBin = filepath.Join(dir, "elicit"), filepath.Join(dir, "elicitd")
	// The elicitd started here keep their questions in memory: with --http the default is a
	// store in the user's data directory, which one process at a time may hold.
	os.Setenv("ELICITD_STORE", "memory")
	// The elicit started here keep their sign-ins in a directory of the tests' own, never in
	// the user's config directory.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	for bin, pkg := range map[string]string{elicitBin: ".", elicitdBin: "../elicitd"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// failsafe bounds every run and every wait on the screen, so a hang fails the test rather
// than stalling it. It is generous: the README test builds both programs from a fresh clone
// while other packages' tests run.
const failsafe = 90 * time.Second

// eras are the two protocol eras elicit can speak.
var eras = []string{"2026-07-28", "2025-11-25"}

type runResult struct {
	stdout, stderr string
	code           int
}

// runElicit runs the elicit binary with no terminal on stdin.
func runElicit(t *testing.T, args ...string) runResult {
	t.Helper()
	return runElicitEnv(t, nil, args...)
}

// runElicitEnv is runElicit with env added to the environment.
func runElicitEnv(t *testing.T, env []string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cmd := exec.CommandContext(ctx, elicitBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		t.Fatalf("elicit %v did not finish within %s: %v\nstderr: %s", args, failsafe, err, stderr.String())
	}
	return runResult{stdout.String(), stderr.String(), code}
}

// writeFile writes content to a file in a test directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
