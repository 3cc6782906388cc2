package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const weightArgs = `{"message": "How heavy is it?", "form": {"title": "Parcel", "fields": [
	{"name": "weight", "type": "number", "label": "Package weight", "required": true, "exclusive_minimum": 0}]}}`

func decodeOut(t *testing.T, s string) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &out), "stdout is the result as JSON: %s", s)
	return out
}

func TestScriptedAnswersInBothEras(t *testing.T) {
	cases := []struct {
		name, answers string
		code          int
		check         func(t *testing.T, out map[string]any, stderr string)
	}{
		{"accept", `[{"weight": "2.5"}]`, 0, func(t *testing.T, out map[string]any, stderr string) {
			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"weight": 2.5}, out["data"])
			assert.Contains(t, stderr, "elicitd 0.1.0-dev asks (question 1): How heavy is it?", "which server asks, and what")
		}},
		{"reprompt", `[{"weight": -1}, {"weight": 5}]`, 0, func(t *testing.T, out map[string]any, stderr string) {
			assert.Equal(t, "completed", out["status"])
			assert.EqualValues(t, 2, out["attempts"])
			assert.Contains(t, stderr, "asks (question 2): Package weight: must be a positive, finite number", "the second prompt says why")
		}},
		{"decline", `[{"action": "decline"}]`, 0, func(t *testing.T, out map[string]any, stderr string) {
			assert.Equal(t, "declined", out["status"])
			assert.Contains(t, stderr, "scripted answer 1: decline")
		}},
		{"cancel", `[{"action": "cancel"}]`, 0, func(t *testing.T, out map[string]any, _ string) {
			assert.Equal(t, "cancelled", out["status"])
			assert.Equal(t, "user_cancelled", out["reason"])
		}},
		// The client's SDK refuses to send content its schema rejects; elicit says so in its
		// own words, names the field, and cancels the question instead.
		{"not the form's type", `[{"weight": "heavy"}]`, 1, func(t *testing.T, out map[string]any, stderr string) {
			assert.Equal(t, "cancelled", out["status"])
			assert.Contains(t, stderr, "elicit: scripted answer 1 does not fit the form, so it was not sent (Package weight: must be a finite number)")
			assert.NotContains(t, stderr, "does not match requested schema", "the SDK's words")
		}},
		// A field the question does not ask would be dropped by the server without a word.
		{"a field not asked", `[{"weight": 5, "colour": "red"}]`, 1, func(t *testing.T, out map[string]any, stderr string) {
			assert.Equal(t, "cancelled", out["status"])
			assert.Contains(t, stderr, "elicit: scripted answer 1 gives colour, which question 1 does not ask (it asks weight), so it was not sent")
		}},
		{"script runs out", `[{"weight": -1}]`, 0, func(t *testing.T, out map[string]any, stderr string) {
			assert.Equal(t, "cancelled", out["status"])
			assert.Contains(t, stderr, "the --answers file has no entry 2; cancelling")
		}},
	}
	for _, era := range eras {
		for _, c := range cases {
			t.Run(era+"/"+c.name, func(t *testing.T) {
				answers := writeFile(t, "answers.json", c.answers)
				r := runElicit(t, "--protocol", era, "--answers", answers, "call", "ask_user", "--args", weightArgs, "--", elicitdBin)
				require.Equal(t, c.code, r.code, "stderr: %s", r.stderr)
				c.check(t, decodeOut(t, r.stdout), r.stderr)
			})
		}
	}
}

func TestToolErrorExitsOne(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			answers := writeFile(t, "answers.json", `[{"action": "decline"}]`)
			r := runElicit(t, "--protocol", era, "--answers", answers, "call", "create_shipment",
				"--args", "@../../examples/create-shipment.json", "--", elicitdBin)
			assert.Equal(t, 1, r.code)
			out := decodeOut(t, r.stdout)
			assert.Equal(t, "ELICITATION_DECLINED", out["code"], "the payload is printed")
		})
	}
}

func TestExampleShipmentCompletes(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			r := runElicit(t, "--protocol", era, "--answers", "../../examples/create-shipment.answers.json", "call", "create_shipment",
				"--args", "@../../examples/create-shipment.json", "--", elicitdBin)
			require.Equal(t, 0, r.code, r.stderr)
			out := decodeOut(t, r.stdout)
			shipment := out["request_body"].(map[string]any)["ShipmentRequest"].(map[string]any)["Shipment"].(map[string]any)
			assert.Equal(t, "Atlanta", shipment["Shipper"].(map[string]any)["Address"].(map[string]any)["City"])
			assert.Equal(t, "Bob Smith", shipment["ShipTo"].(map[string]any)["Name"])
		})
	}
}

func TestNoTerminalAndNoAnswersCancels(t *testing.T) {
	r := runElicit(t, "call", "ask_user", "--args", weightArgs, "--", elicitdBin)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "cancelled", decodeOut(t, r.stdout)["status"])
	assert.Contains(t, r.stderr, "stdin is not a terminal and no --answers file was given")
}

func TestToolsListsTheServersTools(t *testing.T) {
	r := runElicit(t, "tools", "--", elicitdBin)
	require.Equal(t, 0, r.code, r.stderr)
	for _, name := range []string{"ask_user", "create_shipment", "rate_shipment", "list_elicitations"} {
		assert.Contains(t, strings.Split(r.stdout, "\n"), name, "every tool on its own line")
	}
	assert.Contains(t, r.stdout, "    Ask the person using this client", "descriptions, indented")
}

func TestTimeoutBoundsTheCall(t *testing.T) {
	// A "server" that reads and never answers: only --timeout ends the wait.
	r := runElicit(t, "--timeout", "300ms", "tools", "--", "sh", "-c", "while read -r line; do :; done")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "gave up: --timeout 300ms passed before the server finished")
}

func TestServerThatFailsIsExplained(t *testing.T) {
	r := runElicit(t, "tools", "--", elicitdBin, "--timeout", "forever")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "could not start")
	assert.Contains(t, r.stderr, "--timeout", "the server's own complaint is shown")
}

func TestHelp(t *testing.T) {
	r := runElicit(t, "--help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "elicit [flags] call TOOL")
}

func TestUsageErrorsExitTwo(t *testing.T) {
	r := runElicit(t, "call", "ask_user")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "missing -- SERVER_COMMAND")
	assert.Contains(t, r.stderr, "usage:")
	r = runElicit(t, "--answers", "/nonexistent/answers.json", "call", "ask_user", "--", elicitdBin)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--answers: cannot read /nonexistent/answers.json")
}

// The server's log is kept out of the way unless asked for: --server-log appends it to a
// file, -v shows it marked [server], and neither carries a value the person typed.
func TestServerLogAndVerbose(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			// A weight no log line could hold by chance (a timestamp such as 02.521Z holds "2.5").
			answers := writeFile(t, "answers.json", `[{"weight": "1729.25"}]`)
			logFile := filepath.Join(t.TempDir(), "server.log")

			r := runElicit(t, "--protocol", era, "--answers", answers, "--server-log", logFile,
				"call", "ask_user", "--args", weightArgs, "--", elicitdBin)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			log, err := os.ReadFile(logFile)
			require.NoError(t, err)
			assert.Contains(t, string(log), "elicitation finished", "the server's own log line")
			assert.NotContains(t, string(log), "1729", "never a typed value")
			assert.NotContains(t, r.stderr, "[server]", "without -v the log stays out of the terminal")

			r = runElicit(t, "--protocol", era, "--answers", answers, "-v",
				"call", "ask_user", "--args", weightArgs, "--", elicitdBin)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, "[server] ")
			assert.Contains(t, r.stderr, "elicitation finished")
		})
	}
	r := runElicit(t, "--server-log", filepath.Join(t.TempDir(), "missing", "dir", "log"), "tools", "--", elicitdBin)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--server-log: cannot open")
}

func TestServerLinesAreHeldWhileAFormIsOpen(t *testing.T) {
	var out strings.Builder
	s := &serverLines{out: &out}
	_, _ = s.Write([]byte("one\ntw"))
	release := s.hold()
	_, _ = s.Write([]byte("o\nthree\n"))
	assert.Equal(t, "[server] one\n", out.String(), "nothing written while held")
	release()
	assert.Equal(t, "[server] one\n[server] two\n[server] three\n", out.String())
}

// A script may answer a boolean as a person types it: yes/no and y/n are true and false.
func TestScriptedYesNoForBooleans(t *testing.T) {
	args := `{"message": "Options?", "form": {"fields": [
		{"name": "express", "type": "boolean", "label": "Express", "required": true},
		{"name": "gift", "type": "boolean", "label": "Gift wrap"}]}}`
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			answers := writeFile(t, "answers.json", `[{"express": "Yes", "gift": "n"}]`)
			r := runElicit(t, "--protocol", era, "--answers", answers, "call", "ask_user", "--args", args, "--", elicitdBin)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			out := decodeOut(t, r.stdout)
			assert.Equal(t, "completed", out["status"])
			assert.Equal(t, map[string]any{"express": true, "gift": false}, out["data"])
		})
	}
}
