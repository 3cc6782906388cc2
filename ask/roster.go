package ask

// Push-era questions of a dead node. A 2025-11-25 session lives in the memory of the node
// that holds it, so its questions cannot move: when the node dies they die with it. So
// that they still end (client_gone), found by the nodes that survive, each node keeps a
// roster in the store, one record listing its open push-era questions, written at most
// every rosterFlush when it changed (a question opened less than that before its node died
// may go unfound) and at least every rosterBeat. Every rosterSweep each
// node reads the rosters of the others; a roster whose node is not running (the relay
// answers no responders, the signal that no process serves it) has its questions ended
// client_gone by the first survivor to delete it (compare-and-set): each is logged once,
// and counted in the stats. No watch is opened: the rosters are read on a slow tick.

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
	open  map[string]store.OpenQuestion
	dirty bool

	rec    *store.Record // as last written
	warned time.Time     // when a failed write was last logged
	stop   context.CancelFunc
	done   chan struct{}
}

func (el *Elicitor) startRoster() {
	if el.store == nil || el.relay == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Written at once: a node's roster is how the others learn it has died, and take over
	// the questions it held asleep (hibernate.go), though it never had a push-era one.
	r := &roster{el: el, open: map[string]store.OpenQuestion{}, dirty: true, stop: cancel, done: make(chan struct{})}
	el.roster = r
	go r.run(ctx, el.clk)
}

func (r *roster) add(id, tool, owner string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[id] = store.OpenQuestion{ID: id, Tool: tool, Owner: owner, Created: at}
	r.dirty = true
}

func (r *roster) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.open, id)
	r.dirty = true
}

// close stops the roster's loop and deletes its record: a node that stops ends its own
// push-era questions. One that held hibernating questions (asleep) leaves its roster,
// emptied, instead: the first survivor to sweep it takes those questions' timers over.
func (r *roster) close(asleep bool) {
	r.stop()
	<-r.done
	if asleep {
		r.mu.Lock()
		clear(r.open)
		r.mu.Unlock()
		if r.write(context.Background()) == nil {
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
	open := slices.SortedFunc(maps.Values(r.open), func(a, b store.OpenQuestion) int { return a.Created.Compare(b.Created) })
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
		if err := el.store.Delete(ctx, rosterOwner, rec.ID, rec.Revision); err != nil {
			continue // another survivor swept it first, or the store is away: the next sweep sees
		}
		el.adoptAsleep(ctx, rec.Node)
		now := el.clk.Now()
		for _, q := range rec.Open {
			el.swept.Add(1)
			el.log.LogAttrs(ctx, slog.LevelInfo, "elicitation finished", slog.String("id", q.ID), slog.String("tool", q.Tool),
				slog.String("state", elicitation.Cancelled.String()), slog.String("reason", elicitation.ClientGone.String()),
				slog.String("node", rec.Node), slog.String("found_by", el.node),
				slog.String("duration", now.Sub(q.Created).Round(time.Millisecond).String()))
			el.reportSwept(ctx, q, now)
		}
	}
}

// pingMessage asks a node whether it runs; any answer says it does.
var pingMessage = []byte(`{"op":"ping"}`)
