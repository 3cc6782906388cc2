// Package chrome finds the Chromium (or Chrome) binary the browser tests drive, and
// decides what a test does when there is none: skip, saying what to install, or, under CI,
// fail, so that a CI machine without a browser cannot pass by skipping the browser tests.
package chrome

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Env is the environment variable that names the browser to use, a path or a name to look
// up on PATH. When it is set, it is the only place looked at.
const Env = "CHROME"

// Names are the browser's usual names, looked up on PATH in this order when CHROME is not set.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Install says how to get a browser for the tests.
const Install = "install Debian's chromium package (apt-get install chromium) or set CHROME=/path/to/chrome"

// ErrNotFound is returned by Find when CHROME is not set and none of Names is on PATH.
var ErrNotFound = errors.New("no Chromium or Chrome found on PATH (looked for " + strings.Join(Names, ", ") +
	"): the browser tests need one; " + Install)

// Find returns the path of the browser: CHROME if it is set, else the first of Names found
// on PATH. A CHROME that names no executable is an error of its own, not ErrNotFound: the
// person asked for that browser.
func Find() (string, error) {
	if name := os.Getenv(Env); name != "" {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s=%s is not an executable browser (%v); %s", Env, name, err, Install)
		}
		return path, nil
	}
	for _, name := range Names {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", ErrNotFound
}

// Action is what a browser test does after looking for the browser.
type Action int

const (
	Run  Action = iota // a browser was found
	Skip               // none was found, outside CI
	Fail               // none was found under CI, or CHROME names no browser
)

func (a Action) String() string {
	switch a {
	case Run:
		return "run"
	case Skip:
		return "skip"
	case Fail:
		return "fail"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Decide turns Find's error into what the test does; ci is the CI environment variable.
// Only a browser that is simply not installed is skipped, and only outside CI (CI unset, or
// anything strconv.ParseBool does not read as true).
func Decide(err error, ci string) Action {
	switch {
	case err == nil:
		return Run
	case !errors.Is(err, ErrNotFound):
		return Fail
	}
	if underCI, _ := strconv.ParseBool(ci); underCI {
		return Fail
	}
	return Skip
}

// Require returns the browser's path for t, or skips t (no browser, outside CI) or fails it
// (no browser under CI=true, or a CHROME that names no browser), saying what to install.
// Every browser test gets its browser through it.
func Require(t testing.TB) string {
	t.Helper()
	path, err := Find()
	switch Decide(err, os.Getenv("CI")) {
	case Run:
		return path
	case Skip:
		t.Skip(err)
	default:
		if errors.Is(err, ErrNotFound) {
			t.Fatal(err, "(under CI a missing browser fails the browser tests rather than skipping them)")
		} else {
			t.Fatal(err)
		}
	}
	return "" // reached only with a testing.TB whose Skip and Fatal return
}
