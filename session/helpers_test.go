package session_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"elicitd/session"
	"elicitd/validator"
)

// nameForm accepts {"name": <non-blank string>} and reports a field error otherwise.
type nameForm struct {
	calls atomic.Int64
}

func (f *nameForm) WireSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
}

func (f *nameForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	f.calls.Add(1)
	name, _ := content["name"].(string)
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, []validator.FieldError{{Field: "name", Label: "Name", Constraint: "required", Message: "Name: is required"}}
	}
	return map[string]any{"name": name}, nil
}

// prompts is a Prompter that queues every prompt for the test to take.
type prompts chan session.Prompt

func newPrompts() prompts { return make(prompts, 64) }

func (p prompts) Prompt(pr session.Prompt) { p <- pr }

// failsafe bounds every wait in these tests, so a broken actor fails the test instead of
// hanging it. No test waits this long when the code is right.
const failsafe = 10 * time.Second

func (p prompts) next(t *testing.T) session.Prompt {
	t.Helper()
	select {
	case pr := <-p:
		return pr
	case <-time.After(failsafe):
		t.Fatal("no prompt arrived")
		return session.Prompt{}
	}
}

// none reports whether no prompt is queued now.
func (p prompts) none() bool { return len(p) == 0 }

func waitDone(t *testing.T, e *session.Elicitation) session.Outcome {
	t.Helper()
	select {
	case <-e.Done():
	case <-time.After(failsafe):
		t.Fatalf("elicitation %s did not finish; snapshot %+v", e.ID(), e.Snapshot())
	}
	o, ok := e.Outcome()
	if !ok {
		t.Fatal("Done closed but Outcome not ready")
	}
	return o
}

func accept(round int, name string) session.Answer {
	return session.Answer{Round: round, Action: session.Accept, Content: map[string]any{"name": name}}
}

// frozenTimers reads the time from one mock clock and makes its timers on another that never
// moves, so a test can put the time exactly at a deadline without the timer firing.
type frozenTimers struct {
	*clock.Mock
	timers *clock.Mock
}

func (c frozenTimers) Timer(d time.Duration) *clock.Timer { return c.timers.Timer(d) }
