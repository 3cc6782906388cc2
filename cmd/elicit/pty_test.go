package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// screen is a program running in a pseudo-terminal, the screen a person would see (the
// pseudo-terminal's output played through a terminal emulator: the form library redraws
// only the cells that change, so the raw stream cannot say which field has the focus), and a
// way to type at it. Its stdout (the tool result) is kept apart from the terminal.
type screen struct {
	t      *testing.T
	tty    *os.File
	cmd    *exec.Cmd
	stdout bytes.Buffer
	vt     vt10x.Terminal

	mu      sync.Mutex
	drawn   bytes.Buffer  // everything written to the terminal, for failure messages
	changed chan struct{} // signalled after each read
	closed  chan struct{} // closed when the terminal has nothing more to read
}

// startScreen runs name with args in a 40x100 pseudo-terminal; dir is its working
// directory ("" for this one).
func startScreen(t *testing.T, dir, name string, args ...string) *screen {
	t.Helper()
	return startScreenSized(t, 40, 100, false, dir, name, args...)
}

// startScreenSized is startScreen in a rows x cols pseudo-terminal; with onTTY the program's
// stdout is the terminal too, as when a person runs it.
func startScreenSized(t *testing.T, rows, cols int, onTTY bool, dir, name string, args ...string) *screen {
	t.Helper()
	s := &screen{t: t, changed: make(chan struct{}, 1), closed: make(chan struct{}), vt: vt10x.New(vt10x.WithSize(cols, rows))}
	s.cmd = exec.Command(name, args...)
	s.cmd.Dir = dir
	// The same colours wherever it runs: a 256-colour terminal, whatever the caller's has.
	s.cmd.Env = append(os.Environ(), "TERM=xterm-256color", "COLORTERM=", "NO_COLOR=")
	if !onTTY {
		s.cmd.Stdout = &s.stdout
	}
	tty, err := pty.StartWithSize(s.cmd, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
	require.NoError(t, err)
	s.tty = tty
	go func() {
		defer close(s.closed)
		b := make([]byte, 4096)
		var pending []byte // the start of a character split between reads
		for {
			n, err := tty.Read(b)
			s.mu.Lock()
			s.drawn.Write(b[:n])
			pending = append(pending, b[:n]...)
			used, _ := s.vt.Write(pending)
			pending = append(pending[:0], pending[used:]...)
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_ = tty.Close()
		<-s.closed
	})
	return s
}

// waitUntil waits until found says yes to the screen; what names the wait in a failure.
func (s *screen) waitUntil(what string, found func(shown string) bool) {
	s.t.Helper()
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	for {
		s.mu.Lock()
		shown := s.vt.String()
		s.mu.Unlock()
		if found(shown) {
			return
		}
		select {
		case <-s.changed:
		case <-s.closed:
			// The program's last output and its end may come together, and select picks
			// either: the screen is read once more, with everything drawn, before failing.
			s.mu.Lock()
			shown = s.vt.String()
			s.mu.Unlock()
			if found(shown) {
				return
			}
			s.t.Fatalf("the program ended before %s; the screen said:\n%s", what, shown)
		case <-timer.C:
			// ELICIT_PTY_DUMP names a file for the raw terminal stream, to study a failure.
			if dump := os.Getenv("ELICIT_PTY_DUMP"); dump != "" {
				s.mu.Lock()
				_ = os.WriteFile(dump, s.drawn.Bytes(), 0o600)
				s.mu.Unlock()
			}
			s.t.Fatalf("%s did not happen within %s; the screen said:\n%s", what, failsafe, shown)
		}
	}
}

// waitFor waits until text is on the screen.
func (s *screen) waitFor(text string) {
	s.t.Helper()
	s.waitUntil(fmt.Sprintf("%q appeared", text), func(shown string) bool { return strings.Contains(shown, text) })
}

// text is everything drawn so far, without escape sequences.
func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.Strip(s.drawn.String())
}

// focused waits until the field titled title has the focus (the form marks it with a bar):
// keys typed before that would land in the field before it, as they would for a person.
func (s *screen) focused(title string) {
	s.t.Helper()
	s.waitFor("┃ " + title)
}

// focusedTitle waits until one of the titles has the focus and returns it.
func (s *screen) focusedTitle(titles map[string]string) string {
	s.t.Helper()
	var focused string
	s.waitUntil("a field had the focus", func(shown string) bool {
		for title := range titles {
			if strings.Contains(shown, "┃ "+title) {
				focused = title
				return true
			}
		}
		return false
	})
	return focused
}

func (s *screen) typeKeys(keys string) {
	s.t.Helper()
	_, err := s.tty.Write([]byte(keys))
	require.NoError(s.t, err)
}

// wait waits for the program to exit and returns its exit status and stdout.
func (s *screen) wait() (int, string) {
	s.t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(failsafe):
		s.t.Fatalf("the program did not exit; the screen said:\n%s", s.text())
	}
	return s.cmd.ProcessState.ExitCode(), s.stdout.String()
}

const (
	keyEnter     = "\r"
	keyDown      = "\x1b[B"
	keyBackspace = "\x7f"
	keyEsc       = "\x1b"
	keyCtrlC     = "\x03"
)

const personArgs = `{"message": "Tell me about you", "form": {"title": "You", "fields": [
	{"name": "name", "type": "text", "label": "Name", "required": true},
	{"name": "age", "type": "integer", "label": "Age", "minimum": 0},
	{"name": "colour", "type": "select", "label": "Colour", "required": true,
	 "options": [{"value": "r", "title": "Red"}, {"value": "g", "title": "Green"}]}]}}`

func TestInteractiveForm(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := startScreen(t, "", elicitBin, "--protocol", era, "call", "ask_user", "--args", personArgs, "--", elicitdBin)
			s.waitFor("elicitd 0.1.0-dev asks")
			s.waitFor("Tell me about you")
			s.waitFor("Colour *") // the whole form is on screen, in the server's order
			text := s.text()
			assert.Less(t, strings.Index(text, "Name *"), strings.Index(text, "Age"))
			assert.Less(t, strings.Index(text, "Age"), strings.Index(text, "Colour *"))
			s.focused("Name *")
			s.typeKeys("Ada" + keyEnter)
			s.focused("Age")
			s.typeKeys("abc" + keyEnter)
			s.waitFor("must be a non-negative, whole number") // elicit itself refuses it
			s.typeKeys(strings.Repeat(keyBackspace, 3) + "42" + keyEnter)
			s.focused("Colour *")
			s.typeKeys(keyDown)
			s.waitFor("> Green")
			s.typeKeys(keyEnter)
			s.waitFor("Sent.")
			code, stdout := s.wait()
			require.Equal(t, 0, code, s.text())
			out := decodeOut(t, stdout)
			assert.Equal(t, "completed", out["status"])
			assert.EqualValues(t, 1, out["attempts"], "the typo never reached the server")
			assert.Equal(t, map[string]any{"name": "Ada", "age": 42.0, "colour": "g"}, out["data"])
		})
	}
}

func TestInteractiveEscThenDecline(t *testing.T) {
	s := startScreen(t, "", elicitBin, "call", "ask_user", "--args", personArgs, "--", elicitdBin)
	s.waitFor("Colour *")
	s.typeKeys(keyEsc)
	s.waitFor("Leave this question?")
	s.typeKeys(keyDown + keyEnter) // Decline to answer
	s.waitFor("Declined.")
	code, stdout := s.wait()
	require.Equal(t, 0, code, s.text())
	assert.Equal(t, "declined", decodeOut(t, stdout)["status"])
}

func TestInteractiveEscThenBackKeepsTheAnswers(t *testing.T) {
	s := startScreen(t, "", elicitBin, "call", "ask_user", "--args", personArgs, "--", elicitdBin)
	s.waitFor("Colour *")
	s.typeKeys("Ada")
	s.waitFor("Ada")
	s.typeKeys(keyEsc)
	s.waitFor("Leave this question?")
	s.typeKeys(keyEnter) // No, back to the form
	s.focused("Name *")
	s.waitFor("Ada") // still there
	s.typeKeys(keyEnter)
	s.focused("Age")
	s.typeKeys(keyEnter) // left blank
	s.focused("Colour *")
	s.typeKeys(keyEnter) // Red
	s.waitFor("Sent.")
	code, stdout := s.wait()
	require.Equal(t, 0, code, s.text())
	assert.Equal(t, map[string]any{"name": "Ada", "colour": "r"}, decodeOut(t, stdout)["data"])
}

func TestInteractiveCtrlCCancels(t *testing.T) {
	s := startScreen(t, "", elicitBin, "call", "ask_user", "--args", personArgs, "--", elicitdBin)
	s.waitFor("Colour *")
	s.typeKeys("Ad" + keyCtrlC)
	s.waitFor("Cancelled.")
	code, stdout := s.wait()
	require.Equal(t, 0, code, s.text())
	out := decodeOut(t, stdout)
	assert.Equal(t, "cancelled", out["status"])
	assert.Equal(t, "user_cancelled", out["reason"])
}

// A multi-select shows all its options at once, not one at a time.
func TestInteractiveMultiSelectShowsEveryOption(t *testing.T) {
	args := `{"message": "Pick toppings", "form": {"fields": [
		{"name": "note", "type": "text", "label": "Note"},
		{"name": "toppings", "type": "multi_select", "label": "Toppings", "required": true, "options": [
			{"value": "a", "title": "Anchovies"}, {"value": "b", "title": "Basil"}, {"value": "c", "title": "Capers"},
			{"value": "d", "title": "Dill"}, {"value": "e", "title": "Eggplant"}, {"value": "f", "title": "Fennel"}]}]}}`
	s := startScreen(t, "", elicitBin, "call", "ask_user", "--args", args, "--", elicitdBin)
	s.focused("Note")
	s.typeKeys(keyEnter)
	s.focused("Toppings *")
	s.waitUntil("every option was on screen at once", func(shown string) bool {
		for _, o := range []string{"Anchovies", "Basil", "Capers", "Dill", "Eggplant", "Fennel"} {
			if !strings.Contains(shown, o) {
				return false
			}
		}
		return true
	})
	s.typeKeys(" " + keyDown + keyDown + " " + keyEnter) // Anchovies and Capers
	s.waitFor("Sent.")
	code, stdout := s.wait()
	require.Equal(t, 0, code, s.text())
	assert.Equal(t, map[string]any{"toppings": []any{"a", "c"}}, decodeOut(t, stdout)["data"])
}

// When the question ends while the person is still filling the form (here its deadline),
// the form closes at once and says so in words meant for a person; the terminal is back to
// normal before anything else is printed (no staircase in the result printed after it), in
// both eras. In the pull era the client cannot hear the end: elicit closes the form at the
// deadline elicitd put on the request.
func TestInteractiveQuestionEndsWhileFilling(t *testing.T) {
	args := `{"message": "Tell me about you", "timeout_seconds": 6, "form": {"title": "You", "fields": [
		{"name": "name", "type": "text", "label": "Name", "required": true},
		{"name": "age", "type": "integer", "label": "Age"}]}}`
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			s := startScreenSized(t, 40, 100, true, "", elicitBin, "--protocol", era, "call", "ask_user", "--args", args, "--", elicitdBin)
			s.focused("Name *")
			s.waitFor("s to answer (until ")
			s.typeKeys("Ad")
			s.waitFor("Time is up: the question expired before it was answered.")
			code, _ := s.wait()
			require.Equal(t, 0, code, s.text())
			s.waitFor(`"status": "timeout"`)
			assert.NotContains(t, s.text(), "INVALID_REQUEST_STATE", "an agent's words")
			s.mu.Lock()
			shown := s.vt.String()
			s.mu.Unlock()
			for _, line := range strings.Split(shown, "\n") {
				if i := strings.Index(line, "Time is up"); i >= 0 {
					assert.Equal(t, 0, i, "the line starts at the left edge\n%s", shown)
				}
				if i := strings.Index(line, `"status"`); i >= 0 {
					assert.Equal(t, 2, i, "the result is indented as printed, not a staircase\n%s", shown)
				}
			}
		})
	}
}

// On an 80x24 terminal, a form taller than the screen keeps the header and the question in
// view while the person moves down to its last field.
func TestInteractiveSmallTerminalKeepsTheQuestion(t *testing.T) {
	var fields []string
	for i := 1; i <= 9; i++ {
		fields = append(fields, fmt.Sprintf(`{"name": "f%d", "type": "text", "label": "Field %d"}`, i, i))
	}
	args := `{"message": "Tell me everything", "form": {"title": "Survey", "fields": [` + strings.Join(fields, ",") + `]}}`
	s := startScreenSized(t, 24, 80, false, "", elicitBin, "call", "ask_user", "--args", args, "--", elicitdBin)
	s.focused("Field 1")
	for i := 1; i < 9; i++ {
		s.typeKeys(keyEnter)
		s.focused(fmt.Sprintf("Field %d", i+1))
	}
	s.mu.Lock()
	shown := s.vt.String()
	s.mu.Unlock()
	assert.Contains(t, shown, "elicitd 0.1.0-dev asks", "the header is in view")
	assert.Contains(t, shown, "Tell me everything", "the question is in view")
	assert.Contains(t, shown, "┃ Field 9", "the focused field is in view")
	s.typeKeys("x" + keyEnter)
	s.waitFor("Sent.")
	code, stdout := s.wait()
	require.Equal(t, 0, code, s.text())
	assert.Equal(t, map[string]any{"f9": "x"}, decodeOut(t, stdout)["data"])
}
