package ask

// What an Elicitor counts as it works, for the stats resource and for elicitd's metrics,
// which both read these same counters (Elicitor.Counts). A question costs one short
// critical section when it starts and one when it ends; the cluster's rare events (a
// forward, a take-over) an atomic add.

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/elicitd/elicitd/elicitation"
)

// The eras a question is asked in, as Counts names them.
const (
	EraPush = "push" // 2025-11-25 and earlier: elicitation/create over the client's session
	EraPull = "pull" // 2026-07-28: input_required results, the client calls again
)

// AnswerBuckets returns the upper bounds, in seconds, of Counts.AnswerSeconds' buckets: a
// person answers in seconds to minutes, and a question may wait up to a day.
func AnswerBuckets() []float64 { return slices.Clone(answerBuckets[:]) }

// Forward results, as Counts.Forwards names them.
const (
	ForwardAnswered = "answered" // the node holding the call answered the retry
	ForwardGone     = "gone"     // no node holds it any more: taken over here
	ForwardSilent   = "silent"   // the node did not answer its pings: taken over here
	ForwardFailed   = "failed"   // the store failed the forward
)

// Started is how many questions of a tool were started in an era.
type Started struct {
	Tool, Era string
	N         uint64
}

// Ended is how many questions of a tool asked in an era ended in a state (completed,
// cancelled or timeout), for a reason ("" unless cancelled).
type Ended struct {
	Tool, Era, State, Reason string
	N                        uint64
}

// Counts are an Elicitor's counters since it was made. A question is open on the node that
// holds it (its actor, or its sleeper). One that goes on on another node (2026-07-28)
// counts on both: on the node it leaves as ended (shutdown, or fenced) or, asleep there,
// as Moved; as started on the node that takes it (a replay, or the timer of a gone node's
// sleeper taken over).
type Counts struct {
	Started []Started
	Ended   []Ended
	// Rounds are the prompts of the questions that have ended, follow-ups and re-prompts
	// included; Reprompts those that asked again after an invalid answer.
	Rounds, Reprompts uint64
	// AnswerSeconds counts the completed questions by time to answer, from the start to
	// the valid final answer: Buckets[i] is how many took at most AnswerBuckets[i] seconds
	// (cumulative, as Prometheus has it); Count all of them, Sum their seconds.
	AnswerSeconds struct {
		Buckets []uint64
		Count   uint64
		Sum     float64
	}
	// Forwards are the retries this node sent to the node holding their call, by result
	// (ForwardAnswered, ForwardGone, ForwardSilent, ForwardFailed).
	Forwards map[string]uint64
	// TakeOvers are the calls this node took over from another (gone, or silent);
	// ReplayedRounds the rounds their replays answered from the record; Divergences the
	// replays that went another way than the record, and ended the call.
	TakeOvers, ReplayedRounds, Divergences uint64
	// Hibernated counts the rounds after which a call hibernated (durable_hibernate.go): its
	// goroutines ended, and the next round woke it by a replay, here or on another node.
	Hibernated uint64
	// Swept are the open questions of dead nodes this node ended client_gone.
	Swept uint64
	// Moved are the pull-era questions that hibernated here and went on, still open, on
	// another node (woken there, or taken over): no longer open here, and not ended.
	Moved uint64
}

// Open returns the questions started and not yet ended, by era.
func (c Counts) Open() map[string]uint64 {
	open := map[string]uint64{EraPush: 0, EraPull: 0}
	for _, s := range c.Started {
		open[s.Era] += s.N
	}
	for _, e := range c.Ended {
		open[e.Era] -= e.N
	}
	open[EraPull] -= c.Moved
	return open
}

type startKey struct{ tool, era string }

type endKey struct {
	tool, era string
	state     elicitation.State
	reason    elicitation.Reason
}

// tally keeps the counts. Its zero value is ready.
type tally struct {
	mu        sync.Mutex
	started   map[startKey]uint64
	ended     map[endKey]uint64
	rounds    uint64
	reprompts uint64
	buckets   [len(answerBuckets)]uint64 // not cumulative; Counts sums them
	answers   uint64
	answerSum float64

	forwards                               [4]atomic.Uint64 // by forwardResults' index
	takeOvers, replayedRounds, divergences atomic.Uint64
	slept                                  atomic.Uint64 // calls that hibernated after a round
	moved                                  atomic.Uint64 // sleepers whose question woke elsewhere
}

var answerBuckets = [...]float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 86400}

var forwardResults = [...]string{ForwardAnswered, ForwardGone, ForwardSilent, ForwardFailed}

func eraOf(pull bool) string {
	if pull {
		return EraPull
	}
	return EraPush
}

// start counts a question of tool that has started.
func (t *tally) start(tool string, pull bool) {
	k := startKey{tool, eraOf(pull)}
	t.mu.Lock()
	if t.started == nil {
		t.started = map[startKey]uint64{}
	}
	t.started[k]++
	t.mu.Unlock()
}

// end counts a question of tool that started, and ended with o.
func (t *tally) end(tool string, pull bool, o elicitation.Outcome) {
	k := endKey{tool, eraOf(pull), o.State, o.Reason}
	secs := o.Ended.Sub(o.Created).Seconds()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended == nil {
		t.ended = map[endKey]uint64{}
	}
	t.ended[k]++
	t.rounds += uint64(max(o.Rounds, 0))
	t.reprompts += uint64(max(o.Attempts-1, 0))
	if o.State != elicitation.Completed {
		return
	}
	t.answers++
	t.answerSum += secs
	for i, le := range answerBuckets {
		if secs <= le {
			t.buckets[i]++
			break
		}
	}
}

// forwarded counts a forward's result, one of forwardResults.
func (t *tally) forwarded(result string) {
	for i, r := range forwardResults {
		if r == result {
			t.forwards[i].Add(1)
		}
	}
}

// Counts returns the Elicitor's counters so far. It is safe for concurrent use, and costs
// one short lock.
func (el *Elicitor) Counts() Counts {
	t := &el.tally
	var c Counts
	t.mu.Lock()
	for k, n := range t.started {
		c.Started = append(c.Started, Started{Tool: k.tool, Era: k.era, N: n})
	}
	for k, n := range t.ended {
		c.Ended = append(c.Ended, Ended{Tool: k.tool, Era: k.era, State: k.state.String(), Reason: k.reason.String(), N: n})
	}
	c.Rounds, c.Reprompts = t.rounds, t.reprompts
	buckets := t.buckets
	c.AnswerSeconds.Count, c.AnswerSeconds.Sum = t.answers, t.answerSum
	t.mu.Unlock()
	c.AnswerSeconds.Buckets = make([]uint64, len(buckets))
	var sum uint64
	for i, n := range buckets {
		sum += n
		c.AnswerSeconds.Buckets[i] = sum
	}
	c.Forwards = map[string]uint64{}
	for i, r := range forwardResults {
		c.Forwards[r] = t.forwards[i].Load()
	}
	c.TakeOvers, c.ReplayedRounds, c.Divergences = t.takeOvers.Load(), t.replayedRounds.Load(), t.divergences.Load()
	c.Hibernated = t.slept.Load()
	c.Moved = t.moved.Load()
	c.Swept = uint64(max(el.swept.Load(), 0))
	return c
}

// statsJSON is what the stats resource shows of Counts.
func (c Counts) statsJSON() map[string]any {
	return map[string]any{
		"open_by_era":     maps.Clone(c.Open()),
		"rounds":          c.Rounds,
		"reprompts":       c.Reprompts,
		"forwards":        c.Forwards,
		"take_overs":      c.TakeOvers,
		"replayed_rounds": c.ReplayedRounds,
		"divergences":     c.Divergences,
		"hibernated":      c.Hibernated,
	}
}
