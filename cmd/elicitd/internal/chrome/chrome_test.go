package chrome

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBin makes an executable script called name in dir and returns its path.
func fakeBin(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	return path
}

// isolate gives the test a PATH of its own (an empty directory) and no CHROME or CI; it
// returns the PATH directory.
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	t.Setenv(Env, "")
	t.Setenv("CI", "")
	return dir
}

func TestFindLooksUpTheUsualNamesOnPath(t *testing.T) {
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			want := fakeBin(t, isolate(t), name)
			got, err := Find()
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestFindPrefersTheFirstName(t *testing.T) {
	dir := isolate(t)
	fakeBin(t, dir, "google-chrome")
	want := fakeBin(t, dir, "chromium-browser")
	got, err := Find()
	require.NoError(t, err)
	assert.Equal(t, want, got, "chromium-browser comes before google-chrome")
}

func TestFindIgnoresAFileThatIsNotExecutable(t *testing.T) {
	dir := isolate(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "chromium"), []byte("not a program"), 0o644))
	_, err := Find()
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestChromeComesFirst(t *testing.T) {
	dir := isolate(t)
	fakeBin(t, dir, "chromium")
	want := fakeBin(t, t.TempDir(), "my-chrome")
	t.Setenv(Env, want)
	got, err := Find()
	require.NoError(t, err)
	assert.Equal(t, want, got, "CHROME wins over a chromium on PATH")

	t.Setenv(Env, "chromium") // a name is looked up on PATH
	got, err = Find()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "chromium"), got)
}

// A CHROME that names nothing runnable is the person's mistake: it is said, and never
// skipped, even with a browser on PATH.
func TestABadChromeFails(t *testing.T) {
	dir := isolate(t)
	fakeBin(t, dir, "chromium")
	for _, bad := range []string{filepath.Join(dir, "missing"), dir, "no-such-browser"} {
		t.Setenv(Env, bad)
		_, err := Find()
		require.Error(t, err)
		assert.NotErrorIs(t, err, ErrNotFound)
		assert.Contains(t, err.Error(), "CHROME="+bad)
		assert.Contains(t, err.Error(), Install)
		assert.Equal(t, Fail, Decide(err, ""))
	}
}

func TestNoBrowserNamesWhatToInstall(t *testing.T) {
	isolate(t)
	_, err := Find()
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "install Debian's chromium package (apt-get install chromium) or set CHROME=/path/to/chrome")
	for _, name := range Names {
		assert.Contains(t, err.Error(), name)
	}
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		err  error
		ci   string
		want Action
	}{
		{nil, "", Run},
		{nil, "true", Run},
		{ErrNotFound, "", Skip},
		{ErrNotFound, "false", Skip},
		{ErrNotFound, "0", Skip},
		{ErrNotFound, "true", Fail},
		{ErrNotFound, "1", Fail},
		{fmt.Errorf("wrapped: %w", ErrNotFound), "", Skip},
		{fmt.Errorf("CHROME=/x is not an executable browser"), "", Fail},
	} {
		assert.Equal(t, c.want, Decide(c.err, c.ci), "Decide(%v, CI=%q)", c.err, c.ci)
	}
}

// recorder is a testing.TB whose Skip and Fatal record their message and return.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...) }

func TestRequire(t *testing.T) {
	t.Run("found", func(t *testing.T) {
		want := fakeBin(t, isolate(t), "google-chrome-stable")
		r := &recorder{TB: t}
		assert.Equal(t, want, Require(r))
		assert.Empty(t, r.skipped)
		assert.Empty(t, r.fatal)
	})
	t.Run("missing outside CI skips", func(t *testing.T) {
		isolate(t)
		var sub *testing.T
		t.Run("browser test", func(t *testing.T) {
			sub = t
			Require(t)
			t.Error("Require returned without a browser")
		})
		assert.True(t, sub.Skipped(), "a real test is skipped")

		r := &recorder{TB: t}
		assert.Empty(t, Require(r))
		assert.Contains(t, r.skipped, Install)
		assert.Empty(t, r.fatal)
	})
	t.Run("missing under CI fails", func(t *testing.T) {
		isolate(t)
		t.Setenv("CI", "true")
		r := &recorder{TB: t}
		assert.Empty(t, Require(r))
		assert.Empty(t, r.skipped)
		assert.Contains(t, r.fatal, Install)
		assert.Contains(t, r.fatal, "under CI")
	})
}
