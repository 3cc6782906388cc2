package ask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// byKey counts what Options.OnEnd heard, on every node, by Ending.Key: one key is one
// webhook event id.
type byKey struct {
	mu   sync.Mutex
	seen map[string][]ask.Ending
}

func (b *byKey) add(e ask.Ending) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string][]ask.Ending{}
	}
	b.seen[e.Key] = append(b.seen[e.Key], e)
}

func (b *byKey) get() map[string][]ask.Ending {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]ask.Ending{}
	for k, v := range b.seen {
		out[k] = append([]ask.Ending(nil), v...)
	}
	return out
}

// A question's last answer is recorded on node A by a write that lands though A hears it
// failed (a publish whose ack was lost: NATS without its quorum). A keeps the result to
// record again, but the client's identical resend reaches node B, which serves it from the
// ended record. The question's end is reported all the same, once, under one key, with its
// answers: by B, from what the record carries. So too when A recorded the end and died
// before its report left it (its OnEnd heard nothing that reached the outbox).
func TestAnEndRecordedButUnheardIsReportedByTheNodeServingIt(t *testing.T) {
	awake(t) // of a call that keeps its handler between rounds: forwarded, and its writes counted
	for _, pure := range []bool{true, false} {
		for _, died := range []bool{false, true} {
			t.Run(fmt.Sprintf("pure %v, A died %v", pure, died), func(t *testing.T) {
				pureTools = pure
				t.Cleanup(func() { pureTools = false })
				heard, lostWithA := &byKey{}, &byKey{}
				nodeOptions = func(i int, o *ask.Options) {
					o.OnEnd = heard.add
					if i == 0 && died {
						o.OnEnd = lostWithA.add // queued in A's memory only: gone with A
					}
				}
				t.Cleanup(func() { nodeOptions = nil })
				clk := clock.NewMock()
				clk.Set(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
				// The write that records round 2's outcome, the call's end, lands unheard: a
				// pure tool's second update (its claims ride with what follows them), another's
				// fourth (claim, re-prompt, claim, end).
				f := &failNth{Store: memory.New(memory.Options{Clock: clk}), n: map[bool]int{true: 2, false: 4}[pure], land: true}
				nodes := newClusterOn(t, clk, 2, f, nil)
				a, b := nodes[0], nodes[1]

				first := a.call(t, "", 0, nil)
				second := a.call(t, first.RequestState, 1, map[string]any{"name": "Ada", "age": 12})
				r, _ := asked(t, second)
				require.Equal(t, 2, r)
				answer := map[string]any{"age": 36}
				p := payload(t, a, second.RequestState, 2, answer)
				require.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
				if died {
					require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown))
				}

				done := payload(t, b, second.RequestState, 2, answer)
				require.Equal(t, map[string]any{"name": "Ada", "age": float64(36)}, done, "B serves the recorded result")

				got := heard.get()
				require.Len(t, got, 1, "the question's end is reported, under one key: %v", got)
				for key, ends := range got {
					if pure || died {
						assert.Len(t, ends, 1, "reported once, by B")
					} else {
						assert.NotEmpty(t, ends, "A reported it as Ask returned; B may again (the outbox keeps one)")
					}
					for _, e := range ends {
						assert.Equal(t, key, e.Key)
						assert.Equal(t, elicitation.Completed, e.State)
						assert.Equal(t, "contact", e.Tool)
						assert.Equal(t, 2, e.Attempts)
						js, err := json.Marshal(e.Answers)
						require.NoError(t, err)
						assert.JSONEq(t, `{"name":"Ada","age":36}`, string(js))
					}
				}
				for key := range lostWithA.get() {
					assert.Contains(t, got, key, "the key A would have used")
				}
			})
		}
	}
}

// A call that asks twice: the first question's end rides with the write that hands out
// the second's round. That write lands unheard on A; the resend on B gets the second
// question, and the first's end is reported, under the key A would have used.
func TestAnEndCarriedByTheNextQuestionsRound(t *testing.T) {
	for _, pure := range []bool{true, false} {
		t.Run(fmt.Sprintf("pure %v", pure), func(t *testing.T) {
			pureTools = pure
			t.Cleanup(func() { pureTools = false })
			heard := &byKey{}
			nodeOptions = func(_ int, o *ask.Options) { o.OnEnd = heard.add }
			t.Cleanup(func() { nodeOptions = nil })
			clk := clock.NewMock()
			clk.Set(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
			f := &failNth{Store: memory.New(memory.Options{Clock: clk}), n: map[bool]int{true: 1, false: 2}[pure], land: true}
			nodes := newClusterWith(t, clk, 2, f, nil, "twostep", func(*ask.Elicitor) func(context.Context, json.RawMessage) (any, error) {
				return func(ctx context.Context, _ json.RawMessage) (any, error) {
					if _, err := ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm}); err != nil {
						return nil, err
					}
					return ask.Ask(ctx, ask.Question{Message: "And again?", Form: personForm})
				}
			})
			a, b := nodes[0], nodes[1]
			first := a.call(t, "", 0, nil)
			answer := map[string]any{"name": "Ada", "age": 30}
			p := payload(t, a, first.RequestState, 1, answer)
			require.Equal(t, ask.CodeStoreUnavailable, p["code"], "%v", p)
			got := heard.get()
			if pure {
				assert.Empty(t, got, "A holds a pure call's end until its claim is recorded")
			}

			res := b.call(t, first.RequestState, 1, answer)
			r, params := asked(t, res)
			require.Equal(t, 2, r, "B serves the second question's round")
			assert.Equal(t, "And again?", params.Message)
			got = heard.get()
			require.Len(t, got, 1, "%v", got)
			for key, ends := range got {
				assert.True(t, strings.HasSuffix(key, "_q1"), key)
				if pure {
					assert.Len(t, ends, 1)
				}
				for _, e := range ends {
					js, err := json.Marshal(e.Answers)
					require.NoError(t, err)
					assert.JSONEq(t, `{"name":"Ada","age":30}`, string(js))
				}
			}
		})
	}
}

// A question whose node is gone, cancelled by an operator on another node (on its record):
// that node reports the end, under the key the gone node would have used, and a node
// serving the cancellation to the client's retry reports that same end again.
func TestACancelOnTheRecordOfAGoneNodeIsReported(t *testing.T) {
	_, _, heard, nodes := heardCluster(t)
	a, b := nodes[0], nodes[1]
	first := a.call(t, "", 0, nil)
	require.NoError(t, a.el.Close(context.Background(), elicitation.Shutdown)) // the question stays open, on its record
	require.Empty(t, heard.get(), "a node that stops does not end its questions")

	listed := b.manage(t, "list_elicitations", map[string]any{})["elicitations"].([]any)
	require.Len(t, listed, 1)
	id := listed[0].(map[string]any)["id"].(string)
	require.Equal(t, "cancelled", b.manage(t, "cancel_elicitation", map[string]any{"id": id})["state"])
	got := heard.get()
	require.Len(t, got, 1, "%v", got)
	for key, ends := range got {
		assert.True(t, strings.HasSuffix(key, "_q1"), key)
		require.Len(t, ends, 1)
		assert.Equal(t, id, ends[0].QuestionID)
		assert.Equal(t, elicitation.Cancelled, ends[0].State)
		assert.Equal(t, elicitation.Operator, ends[0].Reason)
		assert.Equal(t, "contact", ends[0].Tool)
	}

	p := payload(t, b, first.RequestState, 1, map[string]any{"name": "Ada", "age": 30})
	assert.Equal(t, ask.CodeCancelled, p["code"], "%v", p)
	again := heard.get()
	assert.Len(t, again, 1, "the same end, under the same key: %v", again)
}

// An end whose answers make the record too large: the call still ends and its client gets
// its result, and the end is reported (by its node; by another too, if the record could
// carry it).
func TestAnEndTooLargeToCarry(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 3000), strings.Repeat("a", 5000)} {
		t.Run(fmt.Sprint(len(name)), func(t *testing.T) {
			heard := &byKey{}
			nodeOptions = func(_ int, o *ask.Options) { o.OnEnd = heard.add }
			t.Cleanup(func() { nodeOptions = nil })
			s := memory.New(memory.Options{Limits: store.Limits{MaxRecordBytes: 8 << 10}})
			nodes := newCluster(t, 2, s, nil)
			a, b := nodes[0], nodes[1]
			first := a.call(t, "", 0, nil)
			answer := map[string]any{"name": name, "age": 30}
			p := payload(t, a, first.RequestState, 1, answer)
			assert.Equal(t, name, p["name"], "the client gets its result: %v", p["code"])
			again := payload(t, b, first.RequestState, 1, answer)
			assert.Equal(t, "result_not_kept", again["reason"], "%v", again["message"])
			got := heard.get()
			assert.Len(t, got, 1, "%v", got)
			rec, err := s.Get(context.Background(), "caller:test", onlyID(t, s))
			require.NoError(t, err)
			assert.Equal(t, len(name) < 4000, len(rec.Ends) > 0, "carried only if the record holds it: %d bytes", len(rec.Ends))
		})
	}
}
