package elicitation_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
	"github.com/elicitd/elicitd/validator"
)

// followUps is a continuation that asks the name form again n times after the first valid
// answer, then finishes.
func followUps(f *fixture, n int) elicitation.Continuation {
	asked := 0
	return func(map[string]any) elicitation.Next {
		if asked == n {
			return elicitation.Next{}
		}
		asked++
		return elicitation.Next{FollowUp: &elicitation.Step{Message: "And another name?", Form: f.form}}
	}
}

// A person who answers every round correctly never runs out of attempts, however many
// follow-ups the question asks: attempts count wrong answers only.
func TestFollowUpsCostNoAttempt(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.MaxAttempts = 1
	spec.Continue = followUps(f, 4)
	e := f.start(t, spec)
	for round := 1; round <= 5; round++ {
		p := f.prompts.Next(t)
		require.Equal(t, round, p.Round)
		require.NoError(t, e.Answer(elicitationtest.Accept(round, "Ada")))
	}
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State, "reason %s", o.Reason)
	assert.Equal(t, 1, o.Attempts, "no answer was wrong")
}

// Attempts count invalid answers across every round of the question: the last attempt
// can be used up in a follow-up. Round and attempt are published apart.
func TestInvalidAnswersInAnyRoundUseTheAttempts(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	spec.MaxAttempts = 2
	spec.Continue = followUps(f, 1)
	e := f.start(t, spec)
	for _, step := range []struct {
		round, attempt int
		name           string
	}{{1, 1, ""}, {2, 2, "Ada"}, {3, 2, " "}} {
		p := f.prompts.Next(t)
		require.Equal(t, step.round, p.Round)
		require.Equal(t, step.attempt, p.Attempt)
		snap := e.Snapshot()
		assert.Equal(t, step.round, snap.Round)
		assert.Equal(t, step.attempt, snap.Attempt)
		assert.Equal(t, 2, snap.MaxAttempts)
		assert.Equal(t, elicitation.DefaultMaxRounds, snap.MaxRounds)
		require.NoError(t, e.Answer(elicitationtest.Accept(step.round, step.name)))
	}
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Cancelled, o.State)
	assert.Equal(t, elicitation.MaxAttempts, o.Reason)
	assert.Equal(t, 2, o.Attempts)
	assert.Equal(t, 3, o.Rounds)
	assert.Equal(t, map[string]any{"name": "Ada"}, o.Data, "the valid answer of the first round is kept")
	require.Len(t, o.Errors, 1)
	assert.True(t, f.prompts.Empty())
}

// A continuation that never stops asking ends at MaxRounds, with the data so far; so does
// a re-prompt that would pass it.
func TestMaxRoundsEndsAQuestionThatKeepsAsking(t *testing.T) {
	t.Run("follow-ups", func(t *testing.T) {
		f := newFixture()
		spec := f.spec()
		spec.MaxRounds = 3
		spec.Continue = func(data map[string]any) elicitation.Next {
			return elicitation.Next{Value: "not a result", FollowUp: &elicitation.Step{Message: "Again?", Form: f.form}}
		}
		e := f.start(t, spec)
		for round := 1; round <= 3; round++ {
			p := f.prompts.Next(t)
			require.Equal(t, round, p.Round)
			require.NoError(t, e.Answer(elicitationtest.Accept(round, fmt.Sprint("Ada", round))))
		}
		o := elicitationtest.WaitDone(t, e)
		assert.Equal(t, elicitation.Cancelled, o.State)
		assert.Equal(t, elicitation.TooManyRounds, o.Reason)
		assert.Equal(t, "too_many_rounds", o.Reason.String())
		assert.Equal(t, 3, o.Rounds)
		assert.Equal(t, 1, o.Attempts)
		assert.Equal(t, map[string]any{"name": "Ada3"}, o.Data, "the data so far")
		assert.Nil(t, o.Value, "a question that did not complete has no result")
		assert.True(t, f.prompts.Empty(), "no fourth prompt")
	})
	t.Run("re-prompt", func(t *testing.T) {
		f := newFixture()
		spec := f.spec()
		spec.MaxRounds = 2
		spec.MaxAttempts = 5
		spec.Continue = followUps(f, 1)
		e := f.start(t, spec)
		f.prompts.Next(t)
		require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
		f.prompts.Next(t)
		require.NoError(t, e.Answer(elicitationtest.Accept(2, "")))
		o := elicitationtest.WaitDone(t, e)
		assert.Equal(t, elicitation.TooManyRounds, o.Reason, "attempts were left, rounds were not")
		assert.Equal(t, map[string]any{"name": "Ada"}, o.Data)
		require.Len(t, o.Errors, 1, "the last answer's problems")
	})
}

// The outcome carries every round's answers, merged, and each continuation sees them all:
// a follow-up on another form does not lose the first form's answers.
func TestEveryRoundsAnswersAreKept(t *testing.T) {
	f := newFixture()
	spec := f.spec()
	var seen []map[string]any
	spec.Continue = func(data map[string]any) elicitation.Next {
		seen = append(seen, data)
		if len(seen) == 1 {
			return elicitation.Next{FollowUp: &elicitation.Step{Message: "Where?", Form: cityForm{}}}
		}
		return elicitation.Next{}
	}
	e := f.start(t, spec)
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitationtest.Accept(1, "Ada")))
	f.prompts.Next(t)
	require.NoError(t, e.Answer(elicitation.Answer{Round: 2, Action: elicitation.Accept, Content: map[string]any{"city": "Oslo"}}))
	o := elicitationtest.WaitDone(t, e)
	assert.Equal(t, elicitation.Completed, o.State)
	assert.Equal(t, map[string]any{"name": "Ada", "city": "Oslo"}, o.Data)
	require.Len(t, seen, 2)
	assert.Equal(t, map[string]any{"name": "Ada"}, seen[0], "a map handed out is never changed afterwards")
	assert.Equal(t, o.Data, seen[1])
}

// cityForm accepts {"city": <anything>}.
type cityForm struct{}

func (cityForm) WireSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)
}

func (cityForm) Validate(content map[string]any) (map[string]any, []validator.FieldError) {
	return map[string]any{"city": content["city"]}, nil
}
