package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/webhook"
)

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state, reason string
		want          webhook.Outcome
	}{
		{"completed", "", webhook.OutcomeCompleted},
		{"timeout", "", webhook.OutcomeTimeout},
		{"cancelled", "declined", webhook.OutcomeDeclined},
		{"cancelled", "abandoned", webhook.OutcomeAbandoned},
		{"cancelled", "client_gone", webhook.OutcomeClientGone},
		{"cancelled", "shutdown", webhook.OutcomeShutdown},
		{"cancelled", "user_cancelled", webhook.OutcomeCancelled},
		{"cancelled", "max_attempts", webhook.OutcomeCancelled},
		{"cancelled", "operator", webhook.OutcomeCancelled},
	} {
		got, err := webhook.OutcomeOf(tc.state, tc.reason)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s/%s", tc.state, tc.reason)
	}
	for _, state := range []string{"", "active", "pending", "done"} {
		_, err := webhook.OutcomeOf(state, "")
		assert.Error(t, err, state)
	}
}

// The event's JSON, field by field: what a receiver decodes.
func TestEventJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 28, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	e := webhook.Ending{QuestionID: "Q7KX", Tool: "ask_user", Owner: "o-1", State: "cancelled", Reason: "max_attempts",
		Attempts: 3, Created: at.Add(-90 * time.Second), Ended: at, Answers: map[string]any{"city": "Leeds"}}
	ev, err := webhook.NewEvent(e, false)
	require.NoError(t, err)
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"evt_Q7KX_ended","type":"elicitation.ended","question_id":"Q7KX","tool":"ask_user",
		"owner":"o-1","outcome":"cancelled","reason":"max_attempts","attempts":3,
		"created":"2026-07-28T09:58:30Z","ended":"2026-07-28T10:00:00Z"}`, string(b))

	e.Template, e.State, e.Reason = "address", "completed", ""
	ev, err = webhook.NewEvent(e, true)
	require.NoError(t, err)
	b, err = json.Marshal(ev)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"evt_Q7KX_ended","type":"elicitation.ended","question_id":"Q7KX","tool":"ask_user",
		"template":"address","owner":"o-1","outcome":"completed","attempts":3,
		"created":"2026-07-28T09:58:30Z","ended":"2026-07-28T10:00:00Z","answers":{"city":"Leeds"}}`, string(b))
}

// NewEvent drops every sensitive field's answer itself, whatever the caller passes; with
// answers off it sends none; when nothing is left, there is no answers member at all.
func TestNewEventDropsSensitiveFields(t *testing.T) {
	t.Parallel()
	e := webhook.Ending{QuestionID: "Q1", State: "completed",
		Answers:   map[string]any{"user": "ada", "password": "hunter2", "api_key": "sk-live-123", "nested": map[string]any{"password": "x"}},
		Sensitive: []string{"password", "api_key"}}
	ev, err := webhook.NewEvent(e, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"user": "ada", "nested": map[string]any{"password": "x"}}, ev.Answers,
		"top-level fields by name: a form's answers are flat")
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "hunter2")
	assert.NotContains(t, string(b), "sk-live-123")
	assert.Equal(t, "hunter2", e.Answers["password"], "the caller's map is left as it was")

	ev, err = webhook.NewEvent(e, false)
	require.NoError(t, err)
	assert.Nil(t, ev.Answers)

	e.Answers = map[string]any{"password": "hunter2"}
	ev, err = webhook.NewEvent(e, true)
	require.NoError(t, err)
	b, err = json.Marshal(ev)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "answers")
}

func TestNewEventRefuses(t *testing.T) {
	t.Parallel()
	for _, e := range []webhook.Ending{
		{QuestionID: "", State: "completed"},
		{QuestionID: "a.b", State: "completed"},
		{QuestionID: "Q1", State: "active"},
	} {
		_, err := webhook.NewEvent(e, true)
		require.ErrorIs(t, err, webhook.ErrInvalidEnding, "%+v", e)
	}
}

// An end reported under two question ids (a question taken over by another node) with one
// Key is one event id; a Key an id cannot hold is refused.
func TestEventIDComesFromTheKey(t *testing.T) {
	base := webhook.Ending{Tool: "ask_user", Owner: "o", State: "completed", Created: time.Unix(1, 0), Ended: time.Unix(2, 0), Key: "node1-7_q1"}
	a, b := base, base
	a.QuestionID, b.QuestionID = "QA", "QB"
	ea, err := webhook.NewEvent(a, false)
	require.NoError(t, err)
	eb, err := webhook.NewEvent(b, false)
	require.NoError(t, err)
	assert.Equal(t, "evt_node1-7_q1_ended", ea.ID)
	assert.Equal(t, ea.ID, eb.ID)
	assert.Equal(t, "QB", eb.QuestionID)

	a.Key = "no.dots/here"
	_, err = webhook.NewEvent(a, false)
	assert.ErrorIs(t, err, webhook.ErrInvalidEnding)

	a.Key = ""
	ea, err = webhook.NewEvent(a, false)
	require.NoError(t, err)
	assert.Equal(t, webhook.EventID("QA"), ea.ID, "no key: the question id")
}
