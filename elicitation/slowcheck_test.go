package elicitation_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
	"github.com/elicitd/elicitd/validator"
)

// slowForm's Validate signals that it has begun and then blocks until released: a check that
// takes as long as the test likes.
type slowForm struct {
	elicitationtest.NameForm
	begun   chan struct{}
	release chan struct{}
}

func newSlowForm() *slowForm {
	return &slowForm{begun: make(chan struct{}, 1), release: make(chan struct{})}
}

func (f *slowForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	f.begun <- struct{}{}
	<-f.release
	return f.NameForm.Validate(content)
}

// A check in progress must not hold up the deadline, a cancel or a shutdown: the actor takes
// them at once, and the answer being checked is then refused as too late.
func TestNothingWaitsForACheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		end   func(f *fixture, e *elicitation.Elicitation)
		state elicitation.State
		why   elicitation.Reason
	}{
		{"deadline", func(f *fixture, _ *elicitation.Elicitation) { f.clk.Add(elicitation.DefaultTimeout) }, elicitation.TimedOut, elicitation.None},
		{"cancel", func(_ *fixture, e *elicitation.Elicitation) {
			require.NoError(t, e.Cancel(elicitation.ToolCallCancelled))
		}, elicitation.Cancelled, elicitation.ToolCallCancelled},
		{"shutdown", func(_ *fixture, e *elicitation.Elicitation) { require.NoError(t, e.Cancel(elicitation.Shutdown)) }, elicitation.Cancelled, elicitation.Shutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			form := newSlowForm()
			spec := f.spec()
			spec.Form = form
			e := f.start(t, spec)
			pr := f.prompts.Next(t)
			answered := make(chan error, 1)
			go func() { answered <- e.Answer(elicitationtest.Accept(pr.Round, "Ada")) }()
			select {
			case <-form.begun:
			case <-time.After(elicitationtest.Failsafe):
				t.Fatal("the check never began")
			}
			tc.end(f, e) // while the check is still running
			o := elicitationtest.WaitDone(t, e)
			assert.Equal(t, tc.state, o.State)
			assert.Equal(t, tc.why, o.Reason)
			close(form.release)
			assert.ErrorIs(t, <-answered, elicitation.ErrFinished, "the answer checked meanwhile came too late")
		})
	}
}

// keepForm asks {"a", "b"}; each must be "ok". An invalid answer keeps the valid one and
// narrows the re-prompt to the other.
type keepForm struct {
	fields []string
	kept   map[string]any
}

func (f keepForm) WireSchema() json.RawMessage {
	b, _ := json.Marshal(f.fields)
	return b
}

func (f keepForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	data, errs, _ := f.Keep(content)
	return data, errs
}

func (f keepForm) Keep(content map[string]any) (map[string]any, []validator.FieldError, elicitation.CompiledForm) {
	data := map[string]any{}
	for k, v := range f.kept {
		data[k] = v
	}
	var errs []validator.FieldError
	var wrong []string
	for _, name := range f.fields {
		if content[name] == "ok" {
			data[name] = "ok"
			continue
		}
		wrong = append(wrong, name)
		errs = append(errs, validator.FieldError{Field: name, Label: name, Message: name + ": must be ok"})
	}
	if len(errs) == 0 {
		return data, nil, nil
	}
	return nil, errs, keepForm{fields: wrong, kept: data}
}

func TestAKeeperAsksOnlyForWhatWasWrong(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.Form = keepForm{fields: []string{"a", "b"}}
	e := f.start(t, spec)
	pr := f.prompts.Next(t)
	assert.JSONEq(t, `["a","b"]`, string(pr.Form.WireSchema()))
	require.NoError(t, e.Answer(elicitation.Answer{Round: 1, Action: elicitation.Accept, Content: map[string]any{"a": "ok", "b": "no"}}))
	pr = f.prompts.Next(t)
	assert.JSONEq(t, `["b"]`, string(pr.Form.WireSchema()), "the re-prompt asks only the wrong field")
	assert.Contains(t, pr.Message, "b: must be ok")
	require.NoError(t, e.Answer(elicitation.Answer{Round: 2, Action: elicitation.Accept, Content: map[string]any{"b": "ok"}}))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
	assert.Equal(t, map[string]any{"a": "ok", "b": "ok"}, o.Data, "the kept answer is part of the data")
}
