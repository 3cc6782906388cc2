package ask

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/elicitd/elicitd/elicitation"
)

func TestCountsByToolEraAndOutcome(t *testing.T) {
	el := &Elicitor{}
	at := time.Unix(1000, 0)
	ended := func(state elicitation.State, reason elicitation.Reason, took time.Duration, attempts, rounds int) elicitation.Outcome {
		return elicitation.Outcome{State: state, Reason: reason, Created: at, Ended: at.Add(took), Attempts: attempts, Rounds: rounds}
	}
	el.tally.start("ask_user", false)
	el.tally.start("ask_user", true)
	el.tally.start("ask_user", true)
	el.tally.start("create_shipment", true)
	el.tally.end("ask_user", false, ended(elicitation.Completed, elicitation.None, 3*time.Second, 2, 3))
	el.tally.end("ask_user", true, ended(elicitation.Cancelled, elicitation.Declined, time.Second, 1, 1))
	el.tally.end("ask_user", true, ended(elicitation.Completed, elicitation.None, 90*time.Second, 1, 1))
	el.tally.forwarded(ForwardSilent)
	el.tally.takeOvers.Add(1)

	c := el.Counts()
	assert.ElementsMatch(t, []Started{{"ask_user", EraPush, 1}, {"ask_user", EraPull, 2}, {"create_shipment", EraPull, 1}}, c.Started)
	assert.ElementsMatch(t, []Ended{
		{"ask_user", EraPush, "completed", "", 1},
		{"ask_user", EraPull, "cancelled", "declined", 1},
		{"ask_user", EraPull, "completed", "", 1},
	}, c.Ended)
	assert.Equal(t, map[string]uint64{EraPush: 0, EraPull: 1}, c.Open())
	assert.Equal(t, uint64(5), c.Rounds)
	assert.Equal(t, uint64(1), c.Reprompts)
	assert.Equal(t, uint64(2), c.AnswerSeconds.Count, "only completed questions have a time to answer")
	assert.InDelta(t, 93, c.AnswerSeconds.Sum, 1e-9)
	// Cumulative: 3 s is under 5 s; 90 s under 120 s.
	assert.Equal(t, []uint64{0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}, c.AnswerSeconds.Buckets)
	assert.Len(t, c.AnswerSeconds.Buckets, len(AnswerBuckets()))
	assert.Equal(t, map[string]uint64{ForwardAnswered: 0, ForwardGone: 0, ForwardSilent: 1, ForwardFailed: 0}, c.Forwards)
	assert.Equal(t, uint64(1), c.TakeOvers)
}

// Retryable tells the answers to a request that could not be served now from a call's
// own results.
func TestRetryable(t *testing.T) {
	assert.True(t, Retryable(errStopping.Result()))
	assert.True(t, Retryable(Errorf(CodeStoreUnavailable, "down", "the store is away").Result()))
	assert.True(t, Retryable(stateError("moved", "another node has taken this question over").Result()))
	assert.False(t, Retryable(stateError("used", "used").Result()))
	assert.False(t, Retryable(ErrorResult(ErrDeclined)))
	assert.False(t, Retryable(JSONResult(map[string]any{"code": CodeStoreUnavailable}, false)), "not an error")
	assert.False(t, Retryable(nil))
}
