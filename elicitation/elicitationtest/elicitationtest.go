// Package elicitationtest holds test doubles for code built on package elicitation: a small form,
// a prompter that queues prompts, and waits bounded by a failsafe so a broken actor fails a
// test instead of hanging it.
package elicitationtest

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

// Failsafe bounds every wait here. No wait comes near it when the code under test is right,
// even on a slow, loaded 2-core machine running the whole suite with the race detector.
const Failsafe = 30 * time.Second

// NameForm accepts {"name": <non-blank string>} (trimmed) and reports a "required" field
// error otherwise. It counts its Validate calls.
type NameForm struct {
	Calls atomic.Int64
}

// WireSchema returns a one-field schema.
func (f *NameForm) WireSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
}

// Validate implements elicitation.CompiledForm.
func (f *NameForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	f.Calls.Add(1)
	name, _ := content["name"].(string)
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, []validator.FieldError{{Field: "name", Label: "Name", Constraint: "required", Message: "Name: is required"}}
	}
	return map[string]any{"name": name}, nil
}

// Accept is an accepted answer to round with the given name.
func Accept(round int, name string) elicitation.Answer {
	return elicitation.Answer{Round: round, Action: elicitation.Accept, Content: map[string]any{"name": name}}
}

// Prompts is a Prompter that queues every prompt (up to its capacity) for the test to take.
type Prompts chan elicitation.Prompt

// NewPrompts returns a queue with room for n prompts.
func NewPrompts(n int) Prompts { return make(Prompts, n) }

// Prompt implements elicitation.Prompter.
func (p Prompts) Prompt(pr elicitation.Prompt) { p <- pr }

// Next takes the next prompt, failing the test if none comes.
func (p Prompts) Next(t testing.TB) elicitation.Prompt {
	t.Helper()
	select {
	case pr := <-p:
		return pr
	case <-time.After(Failsafe):
		t.Fatal("no prompt arrived")
		return elicitation.Prompt{}
	}
}

// Empty reports whether no prompt is queued now.
func (p Prompts) Empty() bool { return len(p) == 0 }

// WaitDone waits for e's outcome, failing the test if it does not come.
func WaitDone(t testing.TB, e *elicitation.Elicitation) elicitation.Outcome {
	t.Helper()
	select {
	case <-e.Done():
	case <-time.After(Failsafe):
		t.Fatalf("elicitation %s did not finish; snapshot %+v", e.ID(), e.Snapshot())
	}
	o, ok := e.Outcome()
	if !ok {
		t.Fatal("Done closed but Outcome not ready")
	}
	return o
}

// FrozenTimers reads the time from one mock clock and makes its timers on another that never
// moves, so a test can put the time exactly at a deadline without the timer firing.
type FrozenTimers struct {
	*clock.Mock
	Timers *clock.Mock
}

// Timer makes the timer on the frozen clock.
func (c FrozenTimers) Timer(d time.Duration) *clock.Timer { return c.Timers.Timer(d) }
