package ask

// Push-era questions of a dead node. A 2025-11-25 session lives in the memory of the node
// that holds it, so its questions cannot move: when the node dies they die with it. So
// that they still end (client_gone), found by the nodes that survive, each node keeps a
// roster in the store, one record listing its open push-era questions, written at most
// every rosterFlush when it changed (a question opened less than that before its node died
// may go unfound), and at least every rosterBeat. Holding each question's first prompt
// until a write lists it would close that gap, but a survivor cannot tell a dead node
// from one only cut off from NATS (both answer no responders): a question so listed at
// once is swept client_gone while its cut-off node completes it, and its event, under the
// same id, tells the wrong end (a 10-minute robustness run saw it). Every rosterSweep
// each node reads the rosters of the others; a roster whose node is not
// running (the relay answers no responders, the signal that no process serves it) has
// its questions ended client_gone by the first survivor to delete it (compare-and-set):
// each is logged once, and counted in the stats. No watch is opened: the rosters are
// read on a slow tick.
//
// A node that stops ends its own push-era questions (shutdown), and reports them; but
// that report may not be kept (a webhook outbox that a store blip keeps from taking it in
// the moment the node has left: OnEndErr says so). So the node leaves its roster listing
// those ends, each with its outcome, and the survivor that sweeps it reports them again
// under the same Key. Ends that were kept are not left: told again, their events would be
// sent twice (an outbox forgets an id it delivered before a restart).
//
// A survivor that deleted a dead node's roster holds that node's push questions alone: it
// tells their ends though it begins to stop meanwhile, and an end it could not keep as it
// stops it leaves in its own roster, as its own. The dead node's hibernating questions it
// adopts only while it runs and reads the store: until it has adopted them all, the dead
// node's roster stays (its push questions taken off), and the next sweep, here or on
// another survivor, adopts the rest.

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store"
)

// rosterOwner owns the nodes' roster records.
const rosterOwner = "elicitd:nodes"

// How often a roster is written, and read.
const (
	rosterFlush = 100 * time.Millisecond
	rosterBeat  = time.Minute
	rosterSweep = 5 * time.Second
	// rosterLife is how long a roster outlives its last write: a dead node's roster that
	// no survivor swept (none was running) goes in the end.
	rosterLife = 24 * time.Hour
)

// roster is this node's open push-era questions, and its roster record.
type roster struct {
	el *Elicitor

	mu    sync.Mutex
	open  map[string]rosterEntry
	ended []rosterEntry // removed while the node stops: left in its last roster
	dirty bool

	rec    *store.Record // as last written
	warned time.Time     // when a failed write was last logged
	stop   context.CancelFunc
	done   chan struct{}
}

// rosterEntry is one open question: as the roster lists it, and the question itself.
type rosterEntry struct {
	q store.OpenQuestion
	e *elicitation.Elicitation
}

func (el *Elicitor) startRoster() {
	if el.store == nil || el.relay == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Written at once: a node's roster is how the others learn it has died, and take over
	// the questions it held asleep (durable_hibernate.go), though it never had a push-era one.
	r := &roster{el: el, open: map[string]rosterEntry{}, dirty: true, stop: cancel, done: make(chan struct{})}
	el.roster = r
	go r.run(ctx, el.clk)
}

// add lists the question e.
func (r *roster) add(e *elicitation.Elicitation, tool, owner string, at time.Time) {
	id := e.ID()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[id] = rosterEntry{q: store.OpenQuestion{ID: id, Tool: tool, Owner: owner, Created: at}, e: e}
	r.dirty = true
}

// remove unlists the question id, which has ended, its end told and kept (OnEndErr) or
// not. On a node that stops, one not kept stays in the roster's last write, with its end
// (close).
func (r *roster) remove(id string, kept bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if en, ok := r.open[id]; ok && !kept && r.el.stopping.Load() {
		r.ended = append(r.ended, en)
	}
	delete(r.open, id)
	r.dirty = true
}

// close stops the roster's loop, once the node's calls have returned. A node that ended
// push-era questions as it stopped whose ends it could not keep (OnEndErr), or whose calls
// have not returned, leaves its roster listing their ends, for the survivor that sweeps it
// to report again; one that held hibernating questions (asleep)
// leaves its roster too, for the first survivor to sweep it to take those questions'
// timers over. Otherwise the roster is deleted. A roster that cannot be written now stays
// as last written: the survivors end the questions it lists client_gone.
func (r *roster) close(asleep bool) {
	r.stop()
	<-r.done
	r.mu.Lock()
	var ends []rosterEntry
	for _, en := range r.ended {
		if _, ok := r.open[en.q.ID]; !ok {
			ends = append(ends, en)
		}
	}
	left := map[string]rosterEntry{}
	for _, en := range append(ends, slices.Collect(maps.Values(r.open))...) {
		if en.e == nil {
			// An end this node took over from a dead node's roster, State and all.
		} else if o, ok := en.e.Outcome(); ok {
			en.q.State, en.q.Reason, en.q.Attempts, en.q.Ended = o.State.String(), o.Reason.String(), o.Attempts, o.Ended
		}
		left[en.q.ID] = en
	}
	r.open, r.ended = left, nil
	r.mu.Unlock()
	if asleep || len(left) > 0 {
		if r.write(context.Background()) == nil || len(left) > 0 {
			return
		}
	}
	if r.rec != nil {
		_ = r.el.store.Delete(context.Background(), rosterOwner, r.el.node, r.rec.Revision)
	}
}

func (r *roster) run(ctx context.Context, clk clock.Clock) {
	defer close(r.done)
	flush := clk.Ticker(rosterFlush)
	defer flush.Stop()
	sweep := clk.Ticker(rosterSweep)
	defer sweep.Stop()
	last := clk.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-flush.C:
			r.mu.Lock()
			due := r.dirty || now.Sub(last) >= rosterBeat
			r.mu.Unlock()
			if due && r.write(ctx) == nil {
				last = now
			}
		case <-sweep.C:
			r.sweep(ctx)
		}
	}
}

// write writes the roster record as the questions stand now.
func (r *roster) write(ctx context.Context) error {
	r.mu.Lock()
	open := make([]store.OpenQuestion, 0, len(r.open))
	for _, en := range r.open {
		open = append(open, en.q)
	}
	slices.SortFunc(open, func(a, b store.OpenQuestion) int { return a.Created.Compare(b.Created) })
	r.dirty = false
	r.mu.Unlock()
	el := r.el
	rec := store.Record{ID: el.node, Owner: rosterOwner, Era: "roster", Node: el.node, Created: el.clk.Now(),
		Deadline: el.clk.Now().Add(rosterLife), State: "active", Open: open}
	var rev uint64
	var err error
	if r.rec == nil {
		rev, err = el.store.Create(ctx, rec)
	} else {
		rec.Created, rec.Revision = r.rec.Created, r.rec.Revision
		rev, err = el.store.Update(ctx, rec)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.rec = nil // swept by a node that took this one for dead: written anew next time
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrConflict):
		// Ours, written before its answer was lost (or by a process of the same name):
		// taken up, and written over next time.
		if cur, gerr := el.store.Get(ctx, rosterOwner, el.node); gerr == nil {
			r.rec = &cur
		}
	}
	if err != nil {
		r.mu.Lock()
		r.dirty = true // tried again at the next flush
		r.mu.Unlock()
		if now := el.clk.Now(); !errors.Is(err, context.Canceled) && now.Sub(r.warned) >= time.Minute {
			r.warned = now
			el.log.Warn("the node's roster could not be written", "error", err.Error())
		}
		return err
	}
	rec.Revision = rev
	r.rec = &rec
	return nil
}

// sweep ends the questions of the nodes that are gone.
func (r *roster) sweep(ctx context.Context) {
	el := r.el
	rosters, err := el.store.List(ctx, rosterOwner)
	if err != nil {
		return
	}
	for _, rec := range rosters {
		if rec.Node == el.node {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := el.relay.Send(pctx, rec.Node, pingMessage)
		cancel()
		if !errors.Is(err, store.ErrNoNode) {
			continue // it runs (or cannot be told from one that does): its questions are its own
		}
		// Claimed (compare-and-set) with its push questions taken off: this node alone tells
		// their ends. The roster goes once the dead node's hibernating questions are
		// adopted too; until then the next sweep, here or on another survivor, adopts them.
		claimed := rec
		claimed.Open = nil
		rev, err := el.store.Update(ctx, claimed)
		if err != nil {
			continue // another survivor swept it first, or the store is away: the next sweep sees
		}
		if r.takeOver(ctx, rec) {
			_ = el.store.Delete(ctx, rosterOwner, rec.ID, rev)
		}
	}
}

// takeOver adopts the hibernating questions of rec's node, a dead one whose roster this
// node claimed, and tells the ends of its push-era questions: those it ended as it stopped,
// again, and the others, ended client_gone now. The ends are told though this node begins
// to stop meanwhile (ctx ended: its adoptions are cut short, a stopping registry takes
// none), and an end not kept (OnEndErr) while it stops is left in its own roster, for the
// next survivor (close). It reports whether every hibernating question was adopted.
func (r *roster) takeOver(ctx context.Context, rec store.Record) bool {
	el := r.el
	adopted := el.adoptAsleep(ctx, rec.Node)
	now := el.clk.Now()
	for _, q := range rec.Open {
		if q.State != "" {
			el.log.LogAttrs(ctx, slog.LevelInfo, "the end of a stopped node's question is told again", slog.String("id", q.ID),
				slog.String("tool", q.Tool), slog.String("state", q.State), slog.String("reason", q.Reason),
				slog.String("node", rec.Node), slog.String("found_by", el.node))
		} else {
			el.swept.Add(1)
			q.State, q.Reason, q.Ended = elicitation.Cancelled.String(), elicitation.ClientGone.String(), now
			el.log.LogAttrs(ctx, slog.LevelInfo, "elicitation finished", slog.String("id", q.ID), slog.String("tool", q.Tool),
				slog.String("state", q.State), slog.String("reason", q.Reason),
				slog.String("node", rec.Node), slog.String("found_by", el.node),
				slog.String("duration", now.Sub(q.Created).Round(time.Millisecond).String()))
		}
		if el.tellEnded(q) != nil && el.stopping.Load() {
			r.mu.Lock()
			r.ended = append(r.ended, rosterEntry{q: q})
			r.mu.Unlock()
		}
	}
	return adopted
}

// tellEnded tells Options.OnEnd of q, a question of a dead node that has ended (q.State):
// ended there as its node stopped and left in its roster with its end (close), or ended
// client_gone by this node's sweep. Its Key is the question's id, as its own node's report
// had it: told twice, it makes one webhook event.
func (el *Elicitor) tellEnded(q store.OpenQuestion) error {
	if el.onEnd == nil {
		return nil
	}
	return el.onEnd(Ending{QuestionID: q.ID, Key: q.ID, Tool: q.Tool, Owner: q.Owner, State: parseState(q.State),
		Reason: parseReason(q.Reason), Attempts: q.Attempts, Created: q.Created, Ended: q.Ended})
}

// pingMessage asks a node whether it runs; any answer says it does.
var pingMessage = []byte(`{"op":"ping"}`)
