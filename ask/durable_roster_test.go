package ask_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/memory"
)

// killable is a relay whose nodes the test can stop serving, as a killed process stops.
type killable struct {
	*memory.Relay
	mu    sync.Mutex
	stops map[string]func()
}

func (k *killable) Serve(node string, h func(context.Context, []byte) []byte) (func(), error) {
	stop, err := k.Relay.Serve(node, h)
	if err == nil {
		k.mu.Lock()
		k.stops[node] = stop
		k.mu.Unlock()
	}
	return stop, err
}

func (k *killable) kill(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stops[node]()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A 2025-11-25 question lives in its node's memory, with its session. When the node dies,
// a survivor finds it in the node's roster and ends it client_gone, once, within a sweep.
func TestPushQuestionsOfADeadNodeEndOnASurvivor(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	s := memory.New(memory.Options{Clock: clk})
	relay := &killable{Relay: &memory.Relay{}, stops: map[string]func(){}}
	var logs [2]lockedBuffer
	var els [2]*ask.Elicitor
	var servers [2]*mcp.Server
	for i := range 2 {
		servers[i] = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		els[i] = ask.New(servers[i], ask.Options{Clock: clk, Timeout: time.Hour, Store: s, Relay: relay,
			Logger: slog.New(slog.NewTextHandler(&logs[i], nil))})
		el := els[i]
		t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
		tool := ask.RawTool[struct{}]("contact", "", "asks for a contact", func(ctx context.Context, _ json.RawMessage) (any, error) {
			return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm})
		})
		el.Add(servers[i], tool)
		el.AddManagement(servers[i])
	}
	a := els[0]
	u := elicittest.Connect(t, servers[0], elicittest.Push, elicittest.Never())
	// Ends the open question before the session closes (cleanups run last first).
	t.Cleanup(func() { _ = a.Close(context.Background(), elicitation.Shutdown) })
	go func() {
		_, _ = u.Session.CallTool(context.Background(), &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{}})
	}()
	require.Eventually(t, func() bool { return a.Registry().Len() == 1 }, failsafeBound, time.Millisecond, "A asks")

	// A writes its roster at a flush after the question is added (which follows its start).
	require.Eventually(t, func() bool {
		clk.Add(100 * time.Millisecond)
		r, err := s.Get(context.Background(), "elicitd:nodes", a.Node())
		return err == nil && len(r.Open) == 1
	}, failsafeBound, 10*time.Millisecond, "A's roster lists its open question")
	r, _ := s.Get(context.Background(), "elicitd:nodes", a.Node())
	qid := r.Open[0].ID

	// A roster deleted from under its node (a survivor that took it for dead) is written
	// anew.
	require.NoError(t, s.Delete(context.Background(), "elicitd:nodes", a.Node(), r.Revision))
	clk.Add(time.Minute) // the heartbeat finds it gone
	require.Eventually(t, func() bool {
		clk.Add(100 * time.Millisecond) // and the next flush writes it again
		got, err := s.Get(context.Background(), "elicitd:nodes", a.Node())
		return err == nil && len(got.Open) == 1
	}, failsafeBound, 10*time.Millisecond, "A's roster is back")

	// While A runs, B leaves its questions alone.
	clk.Add(5 * time.Second)
	assert.Never(t, func() bool { return strings.Contains(logs[1].String(), qid) }, 100*time.Millisecond, 10*time.Millisecond)

	relay.kill(a.Node())
	require.Eventually(t, func() bool {
		clk.Add(5 * time.Second) // a sweep
		return strings.Contains(logs[1].String(), "id="+qid)
	}, failsafeBound, 10*time.Millisecond, "B ends the dead node's question")
	line := logs[1].String()
	assert.Contains(t, line, "reason=client_gone")
	assert.Contains(t, line, "node="+a.Node())
	_, err := s.Get(context.Background(), "elicitd:nodes", a.Node())
	assert.ErrorIs(t, err, store.ErrNotFound, "the roster is gone: no survivor ends it twice")
	clk.Add(5 * time.Second)
	assert.Equal(t, 1, strings.Count(logs[1].String(), "id="+qid), "ended once")
	stats := readStats(t, elicittest.Connect(t, servers[1], elicittest.Push))
	assert.EqualValues(t, 1, stats["ended_for_dead_nodes"])
}

// rosterNodes are two nodes on one store and relay, on clk, whose tool "contact" asks
// personForm, with what each one's OnEnd heard.
func rosterNodes(t *testing.T, clk clock.Clock, lost ...bool) (s *memory.Store, relay *killable, els [2]*ask.Elicitor, servers [2]*mcp.Server, heard [2]*endings) {
	t.Helper()
	s = memory.New(memory.Options{Clock: clk})
	relay = &killable{Relay: &memory.Relay{}, stops: map[string]func(){}}
	for i := range 2 {
		heard[i] = &endings{}
		servers[i] = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		h := heard[i]
		keep := func(e ask.Ending) error {
			h.add(e)
			if i < len(lost) && lost[i] {
				return errors.New("the outbox is out") // told, but not kept
			}
			return nil
		}
		els[i] = ask.New(servers[i], ask.Options{Clock: clk, Timeout: time.Hour, Store: s, Relay: relay, OnEndErr: keep})
		el := els[i]
		t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
		el.Add(servers[i], ask.RawTool[struct{}]("contact", "", "asks for a contact", func(ctx context.Context, _ json.RawMessage) (any, error) {
			return ask.Ask(ctx, ask.Question{Message: "Who are you?", Form: personForm})
		}))
		el.AddManagement(servers[i])
	}
	return s, relay, els, servers, heard
}

// A push question that its node ends as it stops (shutdown) is reported there; if that
// report was not kept (OnEndErr: its webhook event lost to a store blip as the node left;
// the robustness suite saw one, issue 52, point 5), the survivor that sweeps the node's
// roster reports it again, under the same Key. One that was kept is not told again: its
// event would go out twice.
func TestAStoppedNodesPushEndIsToldAgainByASurvivor(t *testing.T) {
	for _, lost := range []bool{true, false} {
		t.Run(fmt.Sprintf("lost=%v", lost), func(t *testing.T) {
			clk := clock.NewMock()
			clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
			s, relay, els, servers, heard := rosterNodes(t, clk, lost)
			a := els[0]
			u := elicittest.Connect(t, servers[0], elicittest.Push, elicittest.Never())
			t.Cleanup(func() { _ = a.Close(context.Background(), elicitation.Shutdown) })
			go func() {
				_, _ = u.Session.CallTool(context.Background(), &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{}})
			}()
			require.Eventually(t, func() bool { return a.Registry().Len() == 1 }, 10*time.Second, time.Millisecond, "A asks")

			require.NoError(t, a.Close(context.Background(), elicitation.Shutdown))
			relay.kill(a.Node()) // the process is gone
			own := heard[0].list()
			require.Len(t, own, 1, "A reports the end it made")
			assert.Equal(t, elicitation.Shutdown, own[0].Reason)
			r, err := s.Get(context.Background(), "elicitd:nodes", a.Node())
			if !lost {
				assert.ErrorIs(t, err, store.ErrNotFound, "nothing left to tell: the roster goes")
				clk.Add(10 * time.Second) // two sweeps
				assert.Empty(t, heard[1].list(), "a kept end is not told again")
				return
			}
			require.NoError(t, err, "A's roster stays, with the end")
			require.Len(t, r.Open, 1)
			assert.Equal(t, "shutdown", r.Open[0].Reason)

			require.Eventually(t, func() bool {
				clk.Add(5 * time.Second) // a sweep
				return len(heard[1].list()) == 1
			}, 10*time.Second, 10*time.Millisecond, "B reports it again")
			again := heard[1].list()[0]
			assert.Equal(t, own[0].Key, again.Key, "the same Key: one webhook event id")
			assert.Equal(t, elicitation.Cancelled, again.State)
			assert.Equal(t, elicitation.Shutdown, again.Reason)
			assert.Equal(t, own[0].Owner, again.Owner)
			assert.Equal(t, "contact", again.Tool)
			_, err = s.Get(context.Background(), "elicitd:nodes", a.Node())
			assert.ErrorIs(t, err, store.ErrNotFound, "swept once")
			clk.Add(5 * time.Second)
			assert.Len(t, heard[1].list(), 1, "told once by the survivors")
			stats := readStats(t, elicittest.Connect(t, servers[1], elicittest.Push))
			assert.EqualValues(t, 0, stats["ended_for_dead_nodes"], "it ended on its own node")
		})
	}
}

// stallingSweep is a store whose claim of one roster (a sweep's compare-and-set) waits
// until the sweep's context ends, then writes: the sweeping node began to stop between
// taking the dead node's questions over and telling their ends.
type stallingSweep struct {
	*memory.Store
	roster  string
	entered chan struct{}
}

func (s *stallingSweep) Update(ctx context.Context, rec store.Record) (uint64, error) {
	if rec.Owner == "elicitd:nodes" && rec.ID == s.roster {
		close(s.entered)
		<-ctx.Done()
		return s.Store.Update(context.Background(), rec)
	}
	return s.Store.Update(ctx, rec)
}

// A node that stops while it sweeps a dead node's roster still tells the ends it took
// over; and when it cannot keep them (its webhook outbox out as it leaves: OnEndErr), it
// leaves them in its own roster, for the next survivor to tell again under the same Key.
// Before, the sweep's work after the delete ran on the roster loop's context, ended by the
// stop, and an end not kept was lost with the deleted roster (a 10-minute robustness run).
func TestANodeStoppedMidSweepLeavesTheEndsItTookOver(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	s := memory.New(memory.Options{Clock: clk})
	relay := &killable{Relay: &memory.Relay{}, stops: map[string]func(){}}
	now := clk.Now()
	// The roster of a node that died (no process serves it) with one open question.
	_, err := s.Create(context.Background(), store.Record{ID: "dead-node", Owner: "elicitd:nodes", Era: "roster", Node: "dead-node",
		Created: now, Deadline: now.Add(24 * time.Hour), State: "active",
		Open: []store.OpenQuestion{{ID: "Q1", Tool: "contact", Owner: "owner-digest", Created: now.Add(-time.Minute)}}})
	require.NoError(t, err)

	node := func(st store.Store, keep bool) (*ask.Elicitor, *endings) {
		heard := &endings{}
		server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		el := ask.New(server, ask.Options{Clock: clk, Timeout: time.Hour, Store: st, Relay: relay, OnEndErr: func(e ask.Ending) error {
			heard.add(e)
			if !keep {
				return errors.New("the outbox is out")
			}
			return nil
		}})
		t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
		return el, heard
	}
	stall := &stallingSweep{Store: s, roster: "dead-node", entered: make(chan struct{})}
	b, heardB := node(stall, false)
	require.Eventually(t, func() bool {
		select {
		case <-stall.entered:
			return true
		default:
			clk.Add(time.Second) // B's sweep, every 5 s, finds the dead node's roster
			return false
		}
	}, failsafeBound, 10*time.Millisecond, "B sweeps the dead node's roster")
	require.NoError(t, b.Close(context.Background(), elicitation.Shutdown)) // B stops mid-sweep
	claimed, err := s.Get(context.Background(), "elicitd:nodes", "dead-node")
	require.NoError(t, err, "the dead node's roster stays: B, stopping, adopted none of its hibernating questions")
	require.Empty(t, claimed.Open, "B took the dead node's push questions")
	told := heardB.list()
	require.Len(t, told, 1, "B tells the end it took over, though it stops")
	assert.Equal(t, "Q1", told[0].Key)
	assert.Equal(t, elicitation.ClientGone, told[0].Reason)
	r, err := s.Get(context.Background(), "elicitd:nodes", b.Node())
	require.NoError(t, err, "B's roster stays: it holds an end B could not keep")
	require.Len(t, r.Open, 1)
	assert.Equal(t, "Q1", r.Open[0].ID)
	assert.Equal(t, "client_gone", r.Open[0].Reason)

	_, heardC := node(s, true)
	require.Eventually(t, func() bool {
		clk.Add(5 * time.Second) // C's sweep finds B gone
		return len(heardC.list()) == 1
	}, failsafeBound, 10*time.Millisecond, "C tells the end again")
	again := heardC.list()[0]
	assert.Equal(t, told[0].Key, again.Key, "the same Key: one webhook event id")
	assert.Equal(t, elicitation.Cancelled, again.State)
	assert.Equal(t, elicitation.ClientGone, again.Reason)
	assert.Equal(t, "owner-digest", again.Owner)
	assert.Equal(t, "contact", again.Tool)
	assert.True(t, again.Ended.Equal(told[0].Ended), "ended when B swept it")
}
