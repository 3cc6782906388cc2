package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"charm.land/huh/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/validator"
)

func TestParse(t *testing.T) {
	inv, err := parse([]string{"--protocol", "2025-11-25", "call", "ask_user", "--args", `{"a":1}`, "--timeout", "2s", "--", "srv", "--flag"})
	require.NoError(t, err)
	assert.Equal(t, "call", inv.command)
	assert.Equal(t, "ask_user", inv.tool)
	assert.Equal(t, map[string]any{"a": 1.0}, inv.args)
	assert.Equal(t, "2025-11-25", inv.protocol)
	assert.Equal(t, "2s", inv.timeout.String())
	assert.Equal(t, []string{"srv", "--flag"}, inv.server, "everything after -- is the server's")

	bad := map[string][]string{
		"missing -- SERVER_COMMAND":            {"tools"},
		"missing SERVER_COMMAND after --":      {"tools", "--"},
		"missing subcommand":                   {"--", "srv"},
		`unknown subcommand "run"`:             {"run", "--", "srv"},
		"call takes exactly one TOOL name":     {"call", "--", "srv"},
		"--args must be a JSON object":         {"call", "t", "--args", "[1]", "--", "srv"},
		"--args: cannot read /nonexistent":     {"call", "t", "--args", "@/nonexistent", "--", "srv"},
		"--args belongs to call":               {"tools", "--args", "{}", "--", "srv"},
		`--protocol "1999-01-01" is not`:       {"--protocol", "1999-01-01", "tools", "--", "srv"},
		"--timeout must be positive":           {"--timeout", "-1s", "tools", "--", "srv"},
		"flag provided but not defined: -nope": {"--nope", "tools", "--", "srv"},
	}
	for want, argv := range bad {
		_, err := parse(argv)
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%v", argv)
		assert.Contains(t, err.Error(), want)
	}
}

func TestLoadScript(t *testing.T) {
	s, err := loadScript(writeFile(t, "a.json", `[{"x": "1"}, {"action": "decline"}, {"action": "cancel"}, {"action": "go", "x": 1}]`), &bytes.Buffer{})
	require.NoError(t, err)
	require.Len(t, s.entries, 4)
	assert.Equal(t, "accept", s.entries[0].action)
	assert.Equal(t, "decline", s.entries[1].action)
	assert.Equal(t, "cancel", s.entries[2].action)
	assert.Equal(t, "accept", s.entries[3].action, "a field named action among others is a value")

	for content, want := range map[string]string{
		`{"x": 1}`:             "must be a JSON list of objects",
		`[null]`:               "entry 1 is null",
		`[{"action": "nope"}]`: `entry 1 has action "nope"; use decline or cancel`,
	} {
		_, err := loadScript(writeFile(t, "a.json", content), &bytes.Buffer{})
		assert.ErrorContains(t, err, want)
	}
}

func TestScriptNormalisesButDoesNotCheck(t *testing.T) {
	form, err := validator.CompileMCPSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string","minLength":3}}}`))
	require.NoError(t, err)
	s := &script{entries: []scriptEntry{{action: "accept", content: map[string]any{"n": "5", "s": "ab"}}}, w: &bytes.Buffer{}}
	res, err := s.answer(t.Context(), question{server: "srv", n: 1, form: form})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": 5.0, "s": "ab"}, res.Content, "5 typed as text is a number; the short string is sent for the server to judge")
	res, err = s.answer(t.Context(), question{server: "srv", n: 2, form: form})
	require.NoError(t, err)
	assert.Equal(t, "cancel", res.Action, "the script has run out")
}

func TestSchemasKeepTheServersOrder(t *testing.T) {
	var s schemas
	raw := `{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"elicit-1":{"method":"elicitation/create","params":{"message":"m",
		"requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"number"}}}}}}}}`
	s.record(json.RawMessage(raw))
	decoded := map[string]any{"type": "object", "properties": map[string]any{
		"alpha": map[string]any{"type": "string"}, "mid": map[string]any{"type": "number"}, "zeta": map[string]any{"type": "string"}}}
	original, err := s.original(decoded)
	require.NoError(t, err)
	form, err := validator.CompileMCPSchema(original)
	require.NoError(t, err)
	var names []string
	for _, f := range form.Fields() {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"zeta", "alpha", "mid"}, names)

	unknown, err := s.original(map[string]any{"type": "object"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object"}`, string(unknown), "a schema never seen is its own JSON")
}

func TestPrintResult(t *testing.T) {
	var b bytes.Buffer
	printResult(&b, &mcp.CallToolResult{StructuredContent: map[string]any{"a": 1}, Content: []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}}})
	assert.Equal(t, "{\n  \"a\": 1\n}\n", b.String(), "text that is the structured content is printed once, indented")
	b.Reset()
	printResult(&b, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}})
	assert.Equal(t, "hello\n", b.String())
}

func TestEntryValues(t *testing.T) {
	opt := newEntry(validator.Field{Name: "b", Type: validator.Boolean})
	_, answered := opt.value()
	assert.False(t, answered, "an optional yes/no left alone is no answer")
	opt.text = "yes"
	v, _ := opt.value()
	assert.Equal(t, true, v)
	def := newEntry(validator.Field{Name: "b", Type: validator.Boolean, Default: true})
	v, _ = def.value()
	assert.Equal(t, true, v, "a default is pre-filled")
	sel := newEntry(validator.Field{Name: "c", Type: validator.Select, Required: true, Options: []validator.Option{{Value: "US"}, {Value: "CA"}}, Default: "CA"})
	v, _ = sel.value()
	assert.Equal(t, "CA", v)
	num := newEntry(validator.Field{Name: "n", Type: validator.Number, Default: 2.5})
	assert.Equal(t, "2.5", num.text)
	multi := newEntry(validator.Field{Name: "m", Type: validator.MultiSelect, Default: []any{"a"}})
	v, _ = multi.value()
	assert.Equal(t, []any{"a"}, v)
}

// elicit honours the server's rendering hints: a multiline field is a text area, a
// placeholder shows in an empty input, a password is masked.
func TestHintsChooseTheWidget(t *testing.T) {
	hints := hintsOf(mcp.Meta{ask.HintsKey: map[string]any{
		"notes": map[string]any{"widget": "multiline", "placeholder": "anything else"},
		"pin":   map[string]any{"widget": "password"},
		"bad":   "not an object",
	}})
	assert.Equal(t, map[string]map[string]string{"notes": {"widget": "multiline", "placeholder": "anything else"}, "pin": {"widget": "password"}}, hints)
	assert.Nil(t, hintsOf(nil))

	form, err := validator.Compile(validator.Form{Fields: []validator.Field{{Name: "notes", Type: validator.Text}, {Name: "city", Type: validator.Text}}})
	require.NoError(t, err)
	notes := newEntry(form.Fields()[0])
	notes.field.Widget, notes.field.Placeholder = "multiline", "anything else"
	area, ok := widget(form, notes).(*huh.Text)
	require.True(t, ok, "a multiline field is a text area")
	assert.Contains(t, ansi.Strip(area.View()), "anything else", "the placeholder shows while it is empty")
	city := newEntry(form.Fields()[1])
	_, ok = widget(form, city).(*huh.Input)
	assert.True(t, ok)
	pin := newEntry(form.Fields()[1])
	pin.field.Widget, pin.text = "password", "1234"
	in := widget(form, pin).(*huh.Input)
	assert.NotContains(t, ansi.Strip(in.View()), "1234", "a password is masked")
}

// When a question ends under an open form, the person is told why in their words: at its
// deadline, time is up; before it, someone withdrew it.
func TestEndedSaysWhyForAPerson(t *testing.T) {
	expired, stop := context.WithCancelCause(t.Context())
	stop(errExpired)
	withdrawn, cancel := context.WithCancel(t.Context())
	cancel()
	soon := time.Now().Add(time.Hour)
	assert.Equal(t, "Time is up: the question expired before it was answered.", ended(expired, soon), "elicit's own deadline")
	assert.Equal(t, "Time is up: the question expired before it was answered.", ended(withdrawn, time.Now()), "the server's cancel at the deadline")
	assert.Contains(t, ended(withdrawn, soon), "withdrawn before it was answered: the agent cancelled it")
	assert.Contains(t, ended(withdrawn, time.Time{}), "withdrawn", "no deadline said")
	assert.Empty(t, timeLeft(time.Time{}))
	assert.Regexp(t, `^You have 1h0m0s to answer \(until \d\d:\d\d:\d\d\)\.$`, timeLeft(time.Now().Add(time.Hour+300*time.Millisecond)))
}
