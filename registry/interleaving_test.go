package registry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicitation/elicitationtest"
	"github.com/elicitd/elicitd/registry"
)

// model is what one elicitation should be, by a plain reading of the rules.
type model struct {
	e         *elicitation.Elicitation
	owner     string
	attempt   int
	max       int
	deadline  time.Time
	latest    time.Time
	state     elicitation.State
	reason    elicitation.Reason
	data      map[string]any
	lastRound *atomic.Int64 // the round of the last prompt the actor emitted
	touched   bool          // an event has made a round trip through its actor
}

func (m *model) end(s elicitation.State, r elicitation.Reason) { m.state, m.reason = s, r }

// worker drives random events at its own owners' elicitations and checks each result
// against the model. Workers run in parallel; the clock moves only between their phases.
type worker struct {
	t        *testing.T
	rnd      *rand.Rand
	clk      *clock.Mock
	reg      *registry.Registry
	form     *elicitationtest.NameForm
	owners   []string
	live     []*model
	finished []*model
	all      []*model
	problems []string
}

func (w *worker) fail(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *worker) expect(what string, err, want error) {
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		w.fail("%s: got error %v, want %v", what, err, want)
	}
}

func (w *worker) start() {
	m := &model{owner: w.owners[w.rnd.IntN(len(w.owners))], max: 1 + w.rnd.IntN(4), lastRound: new(atomic.Int64)}
	timeout := time.Duration(1+w.rnd.IntN(5)) * time.Minute
	lifetime := timeout + time.Duration(w.rnd.IntN(10))*time.Minute
	spec := elicitation.Spec{
		Message: "name?", Form: w.form, MaxAttempts: m.max, Timeout: timeout, MaxLifetime: lifetime,
		Prompter: elicitation.PrompterFunc(func(p elicitation.Prompt) { m.lastRound.Store(int64(p.Round)) }),
	}
	now := w.clk.Now()
	e, err := w.reg.Start(m.owner, spec)
	if err != nil {
		w.fail("start: %v", err)
		return
	}
	m.e, m.attempt, m.state = e, 1, elicitation.Active
	m.deadline, m.latest = now.Add(timeout), now.Add(lifetime)
	w.live = append(w.live, m)
	w.all = append(w.all, m)
}

func (w *worker) step() {
	if len(w.live) == 0 || w.rnd.IntN(8) == 0 {
		w.start()
		return
	}
	m := w.live[w.rnd.IntN(len(w.live))]
	id := m.e.ID()
	k := w.rnd.IntN(13)
	m.touched = m.touched || k <= 9 // events 0-9 make a round trip through m's actor
	switch k {
	case 0:
		name := fmt.Sprintf("n%d", w.rnd.IntN(1000))
		w.expect("valid answer", m.e.Answer(elicitationtest.Accept(m.attempt, name)), nil)
		m.data = map[string]any{"name": name}
		m.end(elicitation.Completed, elicitation.None)
	case 1:
		w.expect("invalid answer", m.e.Answer(elicitationtest.Accept(m.attempt, " ")), nil)
		if m.attempt < m.max {
			m.attempt++
		} else {
			m.end(elicitation.Cancelled, elicitation.MaxAttempts)
		}
	case 2:
		round := m.attempt + 1
		if w.rnd.IntN(2) == 0 {
			round = m.attempt - 1
		}
		w.expect("stale answer", m.e.Answer(elicitationtest.Accept(round, "x")), elicitation.ErrStaleRound)
	case 3:
		w.expect("decline", m.e.Answer(elicitation.Answer{Round: m.attempt, Action: elicitation.Decline}), nil)
		m.end(elicitation.Cancelled, elicitation.Declined)
	case 4:
		w.expect("dismiss", m.e.Answer(elicitation.Answer{Round: m.attempt, Action: elicitation.Cancel}), nil)
		m.end(elicitation.Cancelled, elicitation.UserCancelled)
	case 5:
		w.expect("transport failure", m.e.Answer(elicitation.Answer{Round: m.attempt, Action: elicitation.Failed, Err: errors.New("x")}), nil)
		m.end(elicitation.Cancelled, elicitation.TransportError)
	case 6, 7:
		r := elicitation.Reason(1 + w.rnd.IntN(elicitation.NumReasons-1))
		if k == 6 {
			w.expect("cancel", m.e.Cancel(r), nil)
		} else {
			w.expect("registry cancel", w.reg.Cancel(m.owner, id, r), nil)
		}
		m.end(elicitation.Cancelled, r)
	case 8, 9:
		d := time.Duration(1+w.rnd.IntN(300)) * time.Second
		var got time.Time
		var err error
		if k == 8 {
			got, err = m.e.Extend(d)
		} else {
			got, err = w.reg.Extend(m.owner, id, d)
		}
		w.expect("extend", err, nil)
		m.deadline = m.deadline.Add(d)
		if m.deadline.After(m.latest) {
			m.deadline = m.latest
		}
		if !got.Equal(m.deadline) {
			w.fail("extend: deadline %v, want %v", got, m.deadline)
		}
	case 10:
		owner := w.owners[w.rnd.IntN(len(w.owners))]
		want := 0
		for _, o := range w.live {
			if o.owner == owner {
				o.end(elicitation.Cancelled, elicitation.ClientGone)
				want++
			}
		}
		if got := w.reg.CloseOwner(owner); got != want {
			w.fail("CloseOwner(%s) cancelled %d, want %d", owner, got, want)
		}
	case 11, 12:
		if len(w.finished) == 0 {
			return
		}
		f := w.finished[w.rnd.IntN(len(w.finished))]
		w.expect("late answer", f.e.Answer(elicitationtest.Accept(f.attempt, "late")), elicitation.ErrFinished)
		w.expect("late registry cancel", w.reg.Cancel(f.owner, f.e.ID(), elicitation.Operator), registry.ErrNotFound)
		w.checkEnded(f)
		return
	}
	w.settle()
}

// settle moves what the model says has ended from live to finished, checking each.
func (w *worker) settle() {
	kept := w.live[:0]
	for _, m := range w.live {
		if m.state.Terminal() {
			w.checkEnded(m)
			w.finished = append(w.finished, m)
			continue
		}
		s := m.e.Snapshot()
		if !m.touched && (s.State == elicitation.Pending && s.Attempt == 0 || s.State == elicitation.Active && s.Attempt == 1) {
			kept = append(kept, m) // its actor may still be emitting the first prompt
			continue
		}
		if s.State != elicitation.Active || s.Attempt != m.attempt || m.lastRound.Load() != int64(m.attempt) {
			w.fail("%s: snapshot %v attempt %d, prompt round %d; model active attempt %d", s.ID, s.State, s.Attempt, m.lastRound.Load(), m.attempt)
		}
		kept = append(kept, m)
	}
	w.live = kept
}

func (w *worker) checkEnded(m *model) {
	o, ok := m.e.Outcome()
	if !ok {
		w.fail("%s: model ended it (%v %v) but it is live", m.e.ID(), m.state, m.reason)
		return
	}
	if o.State != m.state || o.Reason != m.reason || o.Attempts != m.attempt {
		w.fail("%s: outcome %v/%v after %d attempts; model %v/%v after %d", o.ID, o.State, o.Reason, o.Attempts, m.state, m.reason, m.attempt)
	}
	if m.state == elicitation.Completed && o.Data["name"] != m.data["name"] {
		w.fail("%s: data %v, model %v", o.ID, o.Data, m.data)
	}
	if m.state == elicitation.TimedOut && o.Ended.Before(m.deadline) {
		w.fail("%s: timed out at %v, before its deadline %v", o.ID, o.Ended, m.deadline)
	}
	if _, live := w.reg.Owner(o.ID); live {
		w.fail("%s: ended but still in the registry", o.ID)
	}
}

// Random events over many elicitations from several goroutines at once, with the clock
// moved between rounds; every result and outcome is checked against a model of the rules.
func TestRandomInterleavings(t *testing.T) {
	seed := rand.Uint64()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	})
	const workers, rounds, stepsPerRound = 4, 40, 40
	clk := clock.NewMock()
	reg := registry.New(registry.Config{Clock: clk})
	form := &elicitationtest.NameForm{}
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = &worker{t: t, rnd: rand.New(rand.NewPCG(seed, uint64(i))), clk: clk, reg: reg, form: form,
			owners: []string{fmt.Sprintf("w%d-a", i), fmt.Sprintf("w%d-b", i), fmt.Sprintf("w%d-c", i)}}
	}
	clockRnd := rand.New(rand.NewPCG(seed, 99))

	for range rounds {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() {
				for range stepsPerRound {
					w.step()
				}
			})
		}
		wg.Wait()
		for _, w := range ws {
			require.Empty(t, w.problems)
		}

		clk.Add(time.Duration(clockRnd.IntN(150)) * time.Second)
		now := clk.Now()
		for _, w := range ws {
			for _, m := range w.live {
				if !now.Before(m.deadline) {
					elicitationtest.WaitDone(t, m.e)
					m.end(elicitation.TimedOut, elicitation.None)
				}
			}
			w.settle()
			require.Empty(t, w.problems)
		}
	}

	require.NoError(t, reg.Shutdown(context.Background()))
	want := map[string]uint64{}
	var started, completed, timedOut uint64
	for _, w := range ws {
		for _, m := range w.live {
			m.end(elicitation.Cancelled, elicitation.Shutdown)
		}
		w.settle()
		require.Empty(t, w.problems)
		for _, m := range w.all {
			started++
			switch m.state {
			case elicitation.Completed:
				completed++
			case elicitation.TimedOut:
				timedOut++
			default:
				want[m.reason.String()]++
			}
		}
	}
	require.Equal(t, 0, reg.Len())
	st := reg.Stats()
	require.Equal(t, started, st.Started)
	require.Equal(t, completed, st.Completed)
	require.Equal(t, timedOut, st.TimedOut)
	require.Equal(t, want, st.Cancelled)
	t.Logf("%d elicitations: %d completed, %d timed out, cancelled %v", started, completed, timedOut, want)
}
