// Package storetest is the contract every store.Store keeps, as one test suite: Run it
// against a fresh store per test, and the store behaves as package store says.
//
// Time: a store that owns its time (the memory store, on an injected clock) hands the suite
// its clock.Mock, and the suite moves it exactly to each deadline. A store whose expiry runs
// on real time (JetStream's TTLs) hands none: the suite then uses deadlines a second or two
// away and polls for what must happen (require.Eventually), or must not (until then).
//
// A poll runs on a goroutine of its own: a look at the store in it never uses require (a
// FailNow there ends the look, not the test, and the poll waits out its bound as if the
// condition never held). A look that could not tell (store.ErrUnavailable: a call slower
// than its bound on a loaded machine, say) is "not yet"; any other error fails the test.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
)

// Harness is one fresh store for one test.
type Harness struct {
	Store store.Store
	// Clock is the store's clock when the store owns its time; nil when its expiry runs on
	// real time.
	Clock *clock.Mock
}

// Factory returns a fresh, empty store with these limits (zero fields: store's defaults),
// and closes it when t ends (t.Cleanup); the suite may close it first.
type Factory func(t *testing.T, lim store.Limits) Harness

// realSlack is how long after a deadline a real-time store may take to reclaim a record
// (JetStream: TTLs in whole seconds, rounded up, and its expiry timer), with room for a
// slow, loaded test machine (2 cores running the whole suite with the race detector): a
// failsafe, waited out only by a test that fails.
const realSlack = 30 * time.Second

// callBound bounds each call of the suite's on a store that is up: far longer than any
// takes, even on a loaded machine, so that only a store that does not answer fails.
const callBound = 30 * time.Second

// Run runs the contract against stores from newStore, each test in parallel with a store of
// its own.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name string
		lim  store.Limits
		run  func(*env)
	}{
		{"CreateGet", store.Limits{}, testCreateGet},
		{"CreateExists", store.Limits{}, testCreateExists},
		{"NotFound", store.Limits{}, testNotFound},
		{"Invalid", store.Limits{}, testInvalid},
		{"UpdateCompareAndSet", store.Limits{}, testUpdate},
		{"ConcurrentCompareAndSetOneWinner", store.Limits{}, testConcurrentCAS},
		{"Delete", store.Limits{}, testDelete},
		{"ListOneOwner", store.Limits{}, testList},
		{"OwnersAreIsolated", store.Limits{}, testOwners},
		{"AllOwners", store.Limits{}, testAll},
		{"ExpiresAtDeadline", store.Limits{}, testExpiry},
		{"UpdatedRecordStillExpires", store.Limits{}, testUpdatedExpires},
		{"ExtendMovesExpiry", store.Limits{}, testExtend},
		{"RecordTooLarge", store.Limits{MaxRecordBytes: 4 << 10}, testTooLarge},
		{"FullRefusesNeverEvicts", store.Limits{MaxBytes: 16 << 10}, testFull},
		{"Files", store.Limits{}, testFiles},
		{"FileTooLarge", store.Limits{MaxFileBytes: 64 << 10}, testFileTooLarge},
		{"FilesFull", store.Limits{MaxFileBytes: 64 << 10, MaxFilesBytes: 256 << 10}, testFilesFull},
		// 3 s: time to put a file and read it back before it goes, on a loaded machine.
		{"FilesExpire", store.Limits{FilesTTL: 3 * time.Second}, testFilesExpire},
		{"SharedFirstValueWins", store.Limits{}, testShared},
		{"Closed", store.Limits{}, testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newStore(t, tc.lim)
			tc.run(&env{timed: timed{T: t, clk: h.Clock}, h: h, s: h.Store, lim: tc.lim.WithDefaults()})
		})
	}
}

// env is one test's store and its time.
type env struct {
	timed
	h   Harness
	s   store.Store
	lim store.Limits
}

// timed is one test and its time: a mock clock (nil: real time).
type timed struct {
	*testing.T
	clk *clock.Mock
}

func (e timed) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callBound)
	e.Cleanup(cancel)
	return ctx
}

// unsure reports whether a look at the store in a poll could not tell, so that the poll
// looks again: store.ErrUnavailable. Any other error fails the test, with assert (never
// require: a poll runs on a goroutine of its own), and is unsure too.
func (e timed) unsure(err error, what string) bool {
	if errors.Is(err, store.ErrUnavailable) {
		e.Logf("%s: %v; looking again", what, err)
		return true
	}
	return !assert.NoError(e, err, what)
}

func (e timed) now() time.Time {
	if e.clk != nil {
		return e.clk.Now()
	}
	return time.Now()
}

// passTo moves a mock clock to at (never back); real time passes on its own.
func (e timed) passTo(at time.Time) {
	if m := e.clk; m != nil {
		if d := at.Sub(m.Now()); d > 0 {
			m.Add(d)
		}
	}
}

// eventually requires cond to hold by at: with a mock clock, once the clock is at at;
// in real time, by at plus realSlack.
func (e *env) eventually(at time.Time, cond func() bool, what string) {
	e.Helper()
	if e.h.Clock != nil {
		e.passTo(at)
		require.True(e, cond(), what)
		return
	}
	wait := time.Until(at) + realSlack
	require.Eventually(e, cond, wait, 50*time.Millisecond, what)
}

// holds requires cond to hold until just before at: with a mock clock, at the last
// nanosecond before at; in real time, on every look until a quarter second before at.
// cond says false when it saw otherwise, and errs when it could not tell (a look that
// could not tell is neither for nor against). In real time a look that began before at
// may end after it (a loaded machine), when the store may rightly have moved on: only a
// look that ended before at counts against it, and at least one look must have seen cond
// hold.
func (e *env) holds(at time.Time, cond func() (bool, error), what string) {
	e.Helper()
	if e.h.Clock != nil {
		e.passTo(at.Add(-time.Nanosecond))
		ok, err := cond()
		require.NoError(e, err, what)
		require.True(e, ok, what)
		return
	}
	held := false
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		switch {
		case err != nil:
			e.Logf("%s: %v; looking again", what, err)
		case ok:
			held = true
		case time.Now().Before(at):
			require.Fail(e, "held only until "+time.Now().Format(time.RFC3339Nano), "%s (until %s)", what, at.Format(time.RFC3339Nano))
		default:
			// The look ended past at: it may have seen the store move on at at.
			require.True(e, held, "%s: no look ended before %s", what, at.Format(time.RFC3339Nano))
			return
		}
		if time.Until(at) <= 250*time.Millisecond {
			break
		}
		<-tick.C
	}
	require.True(e, held, "%s: no look could tell before %s", what, at.Format(time.RFC3339Nano))
}

// NewID returns a random record id.
func NewID() string { return strings.TrimRight(rand.Text(), "=") }

// Sample is a record of owner with this id, deadline and created time, about 1.5 KB
// encoded: three answered rounds, an outcome and a page link.
func Sample(owner, id string, created, deadline time.Time) store.Record {
	round := func(i int) store.Round {
		ans, _ := json.Marshal(map[string]any{
			"name":    fmt.Sprintf("Ada Lovelace %d", i),
			"email":   "ada@example.com",
			"street":  "12 St James's Square",
			"city":    "London",
			"postal":  "SW1Y 4JH",
			"country": "GB",
			"weight":  2.5 + float64(i),
		})
		return store.Round{Prompt: fmt.Sprintf("sha256:%064x", i), Answers: ans, Attempts: 1 + i%2, At: created.Add(time.Duration(i) * time.Second)}
	}
	return store.Record{
		ID: id, Owner: owner, Tool: "create_shipment", ArgsDigest: "sha256:" + strings.Repeat("ab", 32), Era: "pull",
		Node: "node-a", Epoch: 1, Created: created.Round(0), Deadline: deadline.Round(0),
		Handed: 3, Claimed: 3, Attempts: 1, State: "active",
		Log:     []store.Round{round(1), round(2), round(3)},
		Outcome: json.RawMessage(`{"content":[{"type":"text","text":"shipment 1Z999AA10123456784 booked"}],"isError":false}`),
		Ends:    json.RawMessage(`[{"id":"q-1","key":"c-1_q1","state":"completed","answers":{"weight":2.5}}]`),
		Page:    &store.PageLink{TokenHash: strings.Repeat("cd", 32), BoundHash: strings.Repeat("ef", 32), CSRF: "Q2SRF4TOKEN7XYZ"},
	}
}

// sample is a Sample created now, with this lifetime.
func (e *env) sample(owner, id string, life time.Duration) store.Record {
	now := e.now()
	return Sample(owner, id, now, now.Add(life))
}

// create creates r and returns it with its revision.
func (e *env) create(r store.Record) store.Record {
	e.Helper()
	rev, err := e.s.Create(e.ctx(), r)
	require.NoError(e, err)
	require.NotZero(e, rev)
	r.Revision = rev
	return r
}

// same requires got to be want, field by field as stored, and at want's revision.
func same(t testing.TB, want, got store.Record) {
	t.Helper()
	wj, err := json.Marshal(want)
	require.NoError(t, err)
	gj, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(wj), string(gj))
	require.Equal(t, want.Revision, got.Revision, "revision")
}

func testCreateGet(e *env) {
	r := e.sample("alice", NewID(), time.Hour)
	r.Revision = 99 // ignored by Create
	rev, err := e.s.Create(e.ctx(), r)
	require.NoError(e, err)
	require.NotZero(e, rev)
	r.Revision = rev
	got, err := e.s.Get(e.ctx(), "alice", r.ID)
	require.NoError(e, err)
	same(e, r, got)
	enc, err := json.Marshal(r)
	require.NoError(e, err)
	assert.InDelta(e, 1500, len(enc), 500, "a sample record is about 1.5 KB")
}

func testCreateExists(e *env) {
	r := e.create(e.sample("alice", NewID(), time.Hour))
	other := r
	other.State = "completed"
	_, err := e.s.Create(e.ctx(), other)
	require.ErrorIs(e, err, store.ErrExists)
	got, err := e.s.Get(e.ctx(), "alice", r.ID)
	require.NoError(e, err)
	same(e, r, got) // the first one stands

	// An id is unique per owner: another owner may use it.
	r2 := e.create(e.sample("bob", r.ID, time.Hour))
	got, err = e.s.Get(e.ctx(), "bob", r.ID)
	require.NoError(e, err)
	same(e, r2, got)
}

func testNotFound(e *env) {
	_, err := e.s.Get(e.ctx(), "alice", NewID())
	require.ErrorIs(e, err, store.ErrNotFound)
	_, err = e.s.Get(e.ctx(), "alice", "no.such/id")
	require.ErrorIs(e, err, store.ErrNotFound)
	r := e.sample("alice", NewID(), time.Hour)
	r.Revision = 1
	_, err = e.s.Update(e.ctx(), r)
	require.ErrorIs(e, err, store.ErrNotFound)
	require.ErrorIs(e, e.s.Delete(e.ctx(), "alice", r.ID, 1), store.ErrNotFound)
}

func testInvalid(e *env) {
	good := e.sample("alice", NewID(), time.Hour)
	bad := map[string]func(r *store.Record){
		"no owner":        func(r *store.Record) { r.Owner = "" },
		"no id":           func(r *store.Record) { r.ID = "" },
		"dotted id":       func(r *store.Record) { r.ID = "a.b" },
		"wildcard id":     func(r *store.Record) { r.ID = "a*" },
		"long id":         func(r *store.Record) { r.ID = strings.Repeat("x", 129) },
		"no deadline":     func(r *store.Record) { r.Deadline = time.Time{} },
		"deadline passed": func(r *store.Record) { r.Deadline = e.now().Add(-time.Second) },
	}
	for what, spoil := range bad {
		r := good
		spoil(&r)
		_, err := e.s.Create(e.ctx(), r)
		require.ErrorIs(e, err, store.ErrInvalid, what)
	}
	r := e.create(good)
	// A compare-and-set needs a revision: 0 would mean "create".
	r0 := r
	r0.Revision = 0
	_, err := e.s.Update(e.ctx(), r0)
	require.ErrorIs(e, err, store.ErrInvalid)
	require.ErrorIs(e, e.s.Delete(e.ctx(), "alice", r.ID, 0), store.ErrInvalid)
	past := r
	past.Deadline = e.now().Add(-time.Second)
	_, err = e.s.Update(e.ctx(), past)
	require.ErrorIs(e, err, store.ErrInvalid)
	require.ErrorIs(e, e.s.PutFile(e.ctx(), "a.b", "f", strings.NewReader("x")), store.ErrInvalid)
	require.ErrorIs(e, e.s.PutFile(e.ctx(), r.ID, "", strings.NewReader("x")), store.ErrInvalid)
}

func testUpdate(e *env) {
	r1 := e.create(e.sample("alice", NewID(), time.Hour))

	r2 := r1
	r2.Claimed, r2.State = 4, "completed"
	rev2, err := e.s.Update(e.ctx(), r2)
	require.NoError(e, err)
	require.Greater(e, rev2, r1.Revision, "revisions increase")
	r2.Revision = rev2
	got, err := e.s.Get(e.ctx(), "alice", r1.ID)
	require.NoError(e, err)
	same(e, r2, got)

	// r1's revision is stale now: a second claim of the same round loses.
	stale := r1
	stale.State = "cancelled"
	_, err = e.s.Update(e.ctx(), stale)
	require.ErrorIs(e, err, store.ErrConflict)
	got, err = e.s.Get(e.ctx(), "alice", r1.ID)
	require.NoError(e, err)
	same(e, r2, got)

	r3 := got
	r3.Epoch, r3.Node = 2, "node-b" // a take-over
	rev3, err := e.s.Update(e.ctx(), r3)
	require.NoError(e, err)
	require.Greater(e, rev3, rev2)
	// The former holder's write, on the revision it knew, fails.
	_, err = e.s.Update(e.ctx(), r2)
	require.ErrorIs(e, err, store.ErrConflict)
}

func testConcurrentCAS(e *env) {
	const racers = 50
	r := e.create(e.sample("alice", NewID(), time.Hour))
	start := make(chan struct{})
	errs := make([]error, racers)
	revs := make([]uint64, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := r
			mine.Claimed, mine.State, mine.Node = r.Claimed+1, "completed", fmt.Sprintf("racer-%d", i)
			<-start
			revs[i], errs[i] = e.s.Update(context.Background(), mine)
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(e, -1, winner, "two winners: racer %d and racer %d", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(e, err, store.ErrConflict, "racer %d", i)
	}
	require.NotEqual(e, -1, winner, "no winner")
	got, err := e.s.Get(e.ctx(), "alice", r.ID)
	require.NoError(e, err)
	require.Equal(e, fmt.Sprintf("racer-%d", winner), got.Node)
	require.Equal(e, revs[winner], got.Revision)
}

func testDelete(e *env) {
	r1 := e.create(e.sample("alice", NewID(), time.Hour))
	r2 := r1
	r2.Attempts = 2
	rev2, err := e.s.Update(e.ctx(), r2)
	require.NoError(e, err)

	require.ErrorIs(e, e.s.Delete(e.ctx(), "alice", r1.ID, r1.Revision), store.ErrConflict)
	_, err = e.s.Get(e.ctx(), "alice", r1.ID)
	require.NoError(e, err, "a stale delete deletes nothing")

	require.NoError(e, e.s.Delete(e.ctx(), "alice", r1.ID, rev2))
	_, err = e.s.Get(e.ctx(), "alice", r1.ID)
	require.ErrorIs(e, err, store.ErrNotFound)
	require.ErrorIs(e, e.s.Delete(e.ctx(), "alice", r1.ID, rev2), store.ErrNotFound)
	r2.Revision = rev2
	_, err = e.s.Update(e.ctx(), r2)
	require.ErrorIs(e, err, store.ErrNotFound)
	list, err := e.s.List(e.ctx(), "alice")
	require.NoError(e, err)
	require.Empty(e, list)

	// The id is free again.
	r3 := e.create(e.sample("alice", r1.ID, time.Hour))
	require.Greater(e, r3.Revision, rev2)
}

func testList(e *env) {
	owners := []string{"alice", "bob", "carol.with.dots", "dave *>", "ëve ünïcode/ spaces", strings.Repeat("long-owner-", 40)}
	want := map[string][]store.Record{}
	base := e.now()
	for i, owner := range owners[:len(owners)-1] { // the last one has none
		for j := range 3 - i%2 {
			// Created out of id order, to see List sort by Created.
			r := Sample(owner, fmt.Sprintf("Q%d%d", 9-j, i), base.Add(time.Duration(j)*time.Millisecond), base.Add(time.Hour))
			want[owner] = append(want[owner], e.create(r))
		}
	}
	for _, owner := range owners {
		got, err := e.s.List(e.ctx(), owner)
		require.NoError(e, err, owner)
		require.Len(e, got, len(want[owner]), owner)
		for i := range got {
			same(e, want[owner][i], got[i])
		}
	}
	// A deleted record is not listed.
	gone := want["alice"][1]
	require.NoError(e, e.s.Delete(e.ctx(), "alice", gone.ID, gone.Revision))
	got, err := e.s.List(e.ctx(), "alice")
	require.NoError(e, err)
	require.Len(e, got, 2)
	for _, r := range got {
		require.NotEqual(e, gone.ID, r.ID)
	}
	// An updated record is listed at its new revision.
	up := want["bob"][0]
	up.State = "completed"
	rev, err := e.s.Update(e.ctx(), up)
	require.NoError(e, err)
	up.Revision = rev
	got, err = e.s.List(e.ctx(), "bob")
	require.NoError(e, err)
	require.Len(e, got, 2)
	same(e, up, got[0])
}

func testOwners(e *env) {
	a := e.create(e.sample("alice", NewID(), time.Hour))
	_, err := e.s.Get(e.ctx(), "bob", a.ID)
	require.ErrorIs(e, err, store.ErrNotFound)
	stolen := a
	stolen.Owner = "bob"
	_, err = e.s.Update(e.ctx(), stolen)
	require.ErrorIs(e, err, store.ErrNotFound)
	require.ErrorIs(e, e.s.Delete(e.ctx(), "bob", a.ID, a.Revision), store.ErrNotFound)
	list, err := e.s.List(e.ctx(), "bob")
	require.NoError(e, err)
	require.Empty(e, list)
	got, err := e.s.Get(e.ctx(), "alice", a.ID)
	require.NoError(e, err)
	same(e, a, got)
}

// gone reports whether owner's record id has been reclaimed: not readable, and its id free
// to create again (which it then is: the caller must not need the id afterwards).
func (e *env) gone(r store.Record) func() bool {
	return func() bool {
		switch _, err := e.s.Get(e.ctx(), r.Owner, r.ID); {
		case err == nil:
			return false // still there
		case !errors.Is(err, store.ErrNotFound):
			e.unsure(err, "get")
			return false
		}
		fresh := Sample(r.Owner, r.ID, e.now(), e.now().Add(time.Hour))
		_, err := e.s.Create(e.ctx(), fresh)
		if errors.Is(err, store.ErrExists) || e.unsure(err, "create again") {
			return false
		}
		return true
	}
}

// present reports whether owner's record id is readable, listed, and its id taken; an
// error when a look could not tell.
func (e *env) present(r store.Record) func() (bool, error) {
	return func() (bool, error) {
		_, err := e.s.Get(e.ctx(), r.Owner, r.ID)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		list, err := e.s.List(e.ctx(), r.Owner)
		if err != nil {
			return false, err
		}
		if len(list) != 1 || list[0].ID != r.ID {
			return false, nil
		}
		_, err = e.s.Create(e.ctx(), r)
		if err == nil {
			return false, nil
		}
		if errors.Is(err, store.ErrExists) {
			return true, nil
		}
		return false, err
	}
}

// The lifetimes here leave a real-time store (TTLs in whole seconds) time to write and
// read a record before its deadline on a loaded machine: 3 s, not 1 or 2.
func testExpiry(e *env) {
	r := e.create(e.sample("alice", NewID(), 3*time.Second))
	e.holds(r.Deadline, e.present(r), "the record is there until its deadline")
	e.eventually(r.Deadline, func() bool {
		_, err := e.s.Get(e.ctx(), "alice", r.ID)
		list, lerr := e.s.List(e.ctx(), "alice")
		if e.unsure(lerr, "list") {
			return false
		}
		return errors.Is(err, store.ErrNotFound) && len(list) == 0
	}, "the record is not read past its deadline")
	e.eventually(r.Deadline, e.gone(r), "the record is reclaimed at its deadline")
}

// The regression test for the trap of nats-server issue 6959: a record written by
// kv.Update gets no TTL and would never expire. An updated record must expire at its
// deadline like a created one.
func testUpdatedExpires(e *env) {
	r := e.create(e.sample("alice", NewID(), 3*time.Second))
	r.Claimed, r.State = r.Claimed+1, "completed"
	rev, err := e.s.Update(e.ctx(), r)
	require.NoError(e, err)
	r.Revision = rev
	rev, err = e.s.Update(e.ctx(), r) // and once more, as a round does
	require.NoError(e, err)
	r.Revision = rev
	got, err := e.s.Get(e.ctx(), "alice", r.ID)
	require.NoError(e, err)
	same(e, r, got)
	e.eventually(r.Deadline, e.gone(r), "an updated record is reclaimed at its deadline")
}

func testExtend(e *env) {
	r := e.create(e.sample("alice", NewID(), 3*time.Second))
	first := r.Deadline
	r.Deadline = first.Add(3 * time.Second)
	rev, err := e.s.Update(e.ctx(), r)
	require.NoError(e, err)
	r.Revision = rev
	// Well past the first deadline (2 s: a store that kept the first TTL has reclaimed it),
	// it is there.
	e.holds(first.Add(2*time.Second), e.present(r), "an extended record outlives its first deadline")
	e.eventually(r.Deadline, e.gone(r), "an extended record is reclaimed at its new deadline")
}

func testTooLarge(e *env) {
	big := e.sample("alice", NewID(), time.Hour)
	big.Outcome = json.RawMessage(`"` + strings.Repeat("x", e.lim.MaxRecordBytes) + `"`)
	_, err := e.s.Create(e.ctx(), big)
	require.ErrorIs(e, err, store.ErrTooLarge)
	_, err = e.s.Get(e.ctx(), "alice", big.ID)
	require.ErrorIs(e, err, store.ErrNotFound)

	r := e.create(e.sample("alice", NewID(), time.Hour))
	grown := r
	grown.Outcome = big.Outcome
	_, err = e.s.Update(e.ctx(), grown)
	require.ErrorIs(e, err, store.ErrTooLarge)
	got, err := e.s.Get(e.ctx(), "alice", r.ID)
	require.NoError(e, err)
	same(e, r, got)
}

func testFull(e *env) {
	var held []store.Record
	var err error
	for range 64 {
		r := e.sample("alice", NewID(), time.Hour)
		var rev uint64
		if rev, err = e.s.Create(e.ctx(), r); err != nil {
			break
		}
		r.Revision = rev
		held = append(held, r)
	}
	require.ErrorIs(e, err, store.ErrFull)
	require.GreaterOrEqual(e, len(held), 4, "a 16 KiB store holds a few 1.5 KB records")
	// Nothing was evicted to make room.
	for _, r := range held {
		got, err := e.s.Get(e.ctx(), "alice", r.ID)
		require.NoError(e, err)
		same(e, r, got)
	}
	// Deleting makes room again.
	for _, r := range held[:2] {
		require.NoError(e, e.s.Delete(e.ctx(), "alice", r.ID, r.Revision))
	}
	e.create(e.sample("alice", NewID(), time.Hour))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func (e *env) readFile(qid, name string) ([]byte, error) {
	e.Helper()
	rc, err := e.s.GetFile(e.ctx(), qid, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func testFiles(e *env) {
	q1, q2 := NewID(), NewID()
	a, b, a2, c := randomBytes(300<<10), []byte{}, randomBytes(1000), []byte("other question")
	require.NoError(e, e.s.PutFile(e.ctx(), q1, "passport scan.pdf", bytes.NewReader(a)))
	require.NoError(e, e.s.PutFile(e.ctx(), q1, "empty", bytes.NewReader(b)))
	require.NoError(e, e.s.PutFile(e.ctx(), q2, "passport scan.pdf", bytes.NewReader(c)))

	got, err := e.readFile(q1, "passport scan.pdf")
	require.NoError(e, err)
	require.True(e, bytes.Equal(a, got), "the file reads back as put")
	got, err = e.readFile(q1, "empty")
	require.NoError(e, err)
	require.Empty(e, got)
	_, err = e.readFile(q1, "missing")
	require.ErrorIs(e, err, store.ErrNotFound)

	// Put again: replaced.
	require.NoError(e, e.s.PutFile(e.ctx(), q1, "passport scan.pdf", bytes.NewReader(a2)))
	got, err = e.readFile(q1, "passport scan.pdf")
	require.NoError(e, err)
	require.Equal(e, a2, got)

	require.NoError(e, e.s.DeleteFiles(e.ctx(), q1))
	for _, name := range []string{"passport scan.pdf", "empty"} {
		_, err = e.readFile(q1, name)
		require.ErrorIs(e, err, store.ErrNotFound, name)
	}
	got, err = e.readFile(q2, "passport scan.pdf")
	require.NoError(e, err, "another question's files stay")
	require.Equal(e, c, got)
	require.NoError(e, e.s.DeleteFiles(e.ctx(), NewID()), "a question without files")
}

func testFileTooLarge(e *env) {
	q := NewID()
	max := int(e.lim.MaxFileBytes)
	require.NoError(e, e.s.PutFile(e.ctx(), q, "exact", bytes.NewReader(randomBytes(max))))
	err := e.s.PutFile(e.ctx(), q, "over", bytes.NewReader(randomBytes(max+1)))
	require.ErrorIs(e, err, store.ErrTooLarge)
	_, err = e.readFile(q, "over")
	require.ErrorIs(e, err, store.ErrNotFound, "nothing of a refused file is kept")
	got, err := e.readFile(q, "exact")
	require.NoError(e, err)
	require.Len(e, got, max)
}

func testFilesFull(e *env) {
	q := NewID()
	var put []string
	var err error
	for i := range 16 {
		name := fmt.Sprintf("f%d", i)
		if err = e.s.PutFile(e.ctx(), q, name, bytes.NewReader(randomBytes(int(e.lim.MaxFileBytes)))); err != nil {
			break
		}
		put = append(put, name)
	}
	require.ErrorIs(e, err, store.ErrFull)
	require.GreaterOrEqual(e, len(put), 2)
	for _, name := range put {
		got, err := e.readFile(q, name)
		require.NoError(e, err, "nothing evicted")
		require.Len(e, got, int(e.lim.MaxFileBytes))
	}
	require.NoError(e, e.s.DeleteFiles(e.ctx(), q))
	require.NoError(e, e.s.PutFile(e.ctx(), q, "again", bytes.NewReader(randomBytes(1000))), "deleting makes room")
}

func testFilesExpire(e *env) {
	q := NewID()
	put := e.now()
	require.NoError(e, e.s.PutFile(e.ctx(), q, "scan", strings.NewReader("a document")))
	_, err := e.readFile(q, "scan")
	require.NoError(e, err)
	e.eventually(put.Add(e.lim.FilesTTL), func() bool {
		_, err := e.readFile(q, "scan")
		return errors.Is(err, store.ErrNotFound)
	}, "a file goes FilesTTL after it was put")
}

func testClosed(e *env) {
	r := e.create(e.sample("alice", NewID(), time.Hour))
	require.NoError(e, e.s.Close())
	require.NoError(e, e.s.Close(), "closing twice")
	_, err := e.s.Create(e.ctx(), e.sample("alice", NewID(), time.Hour))
	require.ErrorIs(e, err, store.ErrUnavailable)
	_, err = e.s.Get(e.ctx(), "alice", r.ID)
	require.ErrorIs(e, err, store.ErrUnavailable)
	_, err = e.s.Update(e.ctx(), r)
	require.ErrorIs(e, err, store.ErrUnavailable)
	require.ErrorIs(e, e.s.Delete(e.ctx(), "alice", r.ID, r.Revision), store.ErrUnavailable)
	_, err = e.s.List(e.ctx(), "alice")
	require.ErrorIs(e, err, store.ErrUnavailable)
	require.ErrorIs(e, e.s.PutFile(e.ctx(), r.ID, "f", strings.NewReader("x")), store.ErrUnavailable)
	_, err = e.s.GetFile(e.ctx(), r.ID, "f")
	require.ErrorIs(e, err, store.ErrUnavailable)
	require.ErrorIs(e, e.s.DeleteFiles(e.ctx(), r.ID), store.ErrUnavailable)
}

// testShared: the first value kept under a name is the one every caller gets, however many
// race to keep theirs; it is not a record (List does not see it) and it does not expire.
func testShared(e *env) {
	ctx := e.ctx()
	const n = 8
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := e.s.Shared(ctx, "state-key", []byte(fmt.Sprintf("value-%d", i)))
			assert.NoError(e, err)
			got[i] = v
		})
	}
	wg.Wait()
	require.NotEmpty(e, got[0])
	for i := range n {
		assert.Equal(e, got[0], got[i], "caller %d got another value", i)
	}
	again, err := e.s.Shared(ctx, "state-key", []byte("late"))
	require.NoError(e, err)
	assert.Equal(e, got[0], again)
	other, err := e.s.Shared(ctx, "other", []byte("x"))
	require.NoError(e, err)
	assert.Equal(e, []byte("x"), other, "names are separate")
	_, err = e.s.Shared(ctx, "bad name", []byte("x"))
	assert.ErrorIs(e, err, store.ErrInvalid)
	e.passTo(e.now().Add(48 * time.Hour))
	kept, err := e.s.Shared(ctx, "state-key", []byte("after"))
	require.NoError(e, err)
	assert.Equal(e, got[0], kept, "a shared value does not expire")
}

// RunRelay is the contract of a store.Relay: a node served answers what it is sent, each
// request on a goroutine of its own; a node not served (never, or no longer) is
// store.ErrNoNode at once. A store.Notifier's notice reaches the node's handler once.
func RunRelay(t *testing.T, r store.Relay) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.Send(ctx, "nobody", []byte("hello"))
	require.ErrorIs(t, err, store.ErrNoNode, "a node nobody serves")

	release := make(chan struct{})
	stop, err := r.Serve("node-a", func(_ context.Context, msg []byte) []byte {
		if string(msg) == "wait" {
			<-release
		}
		return append([]byte("a:"), msg...)
	})
	require.NoError(t, err)
	slow := make(chan []byte, 1)
	go func() {
		b, err := r.Send(ctx, "node-a", []byte("wait"))
		assert.NoError(t, err)
		slow <- b
	}()
	b, err := r.Send(ctx, "node-a", []byte("hello"))
	require.NoError(t, err, "a request is answered while another waits: each has its own goroutine")
	assert.Equal(t, "a:hello", string(b))
	close(release)
	assert.Equal(t, "a:wait", string(<-slow))

	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	blocked := make(chan struct{})
	stopB, err := r.Serve("node-b", func(ctx context.Context, _ []byte) []byte {
		<-blocked
		return nil
	})
	require.NoError(t, err)
	_, err = r.Send(short, "node-b", []byte("x"))
	require.ErrorIs(t, err, context.DeadlineExceeded, "a node that does not answer: the caller's context ends the wait")
	close(blocked)
	stopB()

	stop()
	_, err = r.Send(ctx, "node-a", []byte("hello"))
	require.ErrorIs(t, err, store.ErrNoNode, "a node no longer served")

	n, ok := r.(store.Notifier)
	if !ok {
		return
	}
	// A notice reaches the node's handler once, and nobody waits for its answer; one to a
	// node nobody serves is lost, without an error.
	require.NoError(t, n.Notify("nobody", []byte("lost")))
	heard := make(chan string, 4)
	stopN, err := r.Serve("node-n", func(_ context.Context, msg []byte) []byte {
		heard <- string(msg)
		return []byte("an answer nobody reads")
	})
	require.NoError(t, err)
	defer stopN()
	require.NoError(t, n.Notify("node-n", []byte("woke")))
	select {
	case got := <-heard:
		assert.Equal(t, "woke", got)
	case <-ctx.Done():
		t.Fatal("the notice never reached the node")
	}
	// Sent after it, a request is answered after it too: the notice came once.
	b, err = r.Send(ctx, "node-n", []byte("after"))
	require.NoError(t, err)
	assert.Equal(t, "an answer nobody reads", string(b))
	assert.Equal(t, "after", <-heard)
	assert.Empty(t, heard, "the notice was heard once")
}

// testAll: a store.Scanner reads every owner's live records, and only live ones.
func testAll(e *env) {
	sc, ok := e.s.(store.Scanner)
	if !ok {
		e.Fatalf("%T is not a store.Scanner", e.s)
	}
	base := e.now()
	want := map[string]store.Record{}
	for i, owner := range []string{"alice", "bob", "carol.with.dots"} {
		for j := range 2 {
			r := e.create(Sample(owner, fmt.Sprintf("A%d%d", i, j), base, base.Add(time.Hour)))
			want[owner+"/"+r.ID] = r
		}
	}
	gone := want["bob/A10"]
	require.NoError(e, e.s.Delete(e.ctx(), "bob", gone.ID, gone.Revision))
	delete(want, "bob/A10")
	got, err := sc.All(e.ctx())
	require.NoError(e, err)
	require.Len(e, got, len(want))
	for _, r := range got {
		w, ok := want[r.Owner+"/"+r.ID]
		require.True(e, ok, "%s/%s is not one of the live records", r.Owner, r.ID)
		same(e, w, r)
	}
}
