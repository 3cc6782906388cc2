// Package registry keeps track of every live elicitation: it starts them within limits,
// finds them by id and by owner (an MCP client session), cancels what an owner leaves
// behind, and shuts them all down. A finished elicitation leaves the registry the moment its
// outcome is fixed, so memory follows the live count, never the history.
//
// The registry knows nothing of forms or tools: it holds Members (an *elicitation.Elicitation,
// the live actor, or a question that hibernates between rounds: Hibernate) and the owner each
// belongs to.
package registry

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/elicitation"
)

// Config sets a registry's clock and limits. The zero Config has no limits and the real clock.
type Config struct {
	// Clock drives the rate limit and every elicitation's deadline.
	Clock clock.Clock
	// Rate is how many elicitations per second one owner may start, on average; Burst is how
	// many it may start at once. Rate 0 turns the per-owner limit off.
	Rate  rate.Limit
	Burst int
	// MaxLive caps the live elicitations awake (actors, each with its goroutine) of all
	// owners together; MaxAsleep caps those hibernating (Hibernate, Adopt: no goroutine, a
	// small stand-in), which cost a tenth as much. Start is refused when either is reached;
	// a question that hibernates, wakes or is adopted is not a start, and is never refused.
	// 0 means no cap.
	MaxLive   int
	MaxAsleep int
	// OnEnd, if set, is called once for every elicitation that ends, with its owner and
	// outcome, on the actor's goroutine after it has left the registry and before its Done
	// channel closes. It must not block and must not call the elicitation's methods.
	OnEnd func(owner string, o elicitation.Outcome)
}

// Errors returned by Start, Cancel and Extend; test with errors.Is.
var (
	// ErrRateLimited: the owner started too many elicitations too quickly. The error is a
	// *RateLimitError that says when to retry.
	ErrRateLimited = errors.New("registry: rate limited")
	// ErrTooManyLive: a global cap on live elicitations (awake, or asleep) is reached.
	ErrTooManyLive = errors.New("registry: too many live elicitations")
	// ErrNotFound: no live elicitation has that id (it may have finished).
	ErrNotFound = errors.New("registry: no live elicitation with that id")
	// ErrClosed: Shutdown has been called.
	ErrClosed = errors.New("registry: shut down")
)

// RateLimitError is the refusal of a start by the per-owner rate limit.
type RateLimitError struct {
	Owner      string
	RetryAfter time.Duration // when the owner's next start would be allowed
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("registry: rate limited: too many elicitations started by this client; retry after %s", e.RetryAfter)
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// Registry tracks live elicitations. Use New; all methods are safe for concurrent use.
type Registry struct {
	clk     clock.Clock
	rate    rate.Limit
	burst   int
	maxLive int
	maxAsl  int
	onEnd   func(string, elicitation.Outcome)
	env     elicitation.Env // shared by every elicitation this registry starts
	actors  sync.WaitGroup

	mu     sync.Mutex
	closed bool
	byID   map[string]entry
	asleep int // of byID, the hibernating stand-ins
	// sleeps are the stand-ins Hibernate set, by id, to take their actors' places when they
	// end.
	sleeps  map[string]Member
	byOwner map[string]*owner
	sweepAt int // sweep idle owners when a new one would pass this many
	totals  totals
}

// Member is one question the registry holds: its live actor, an *elicitation.Elicitation, or
// what stands for it while it hibernates (Hibernate): no goroutine, its state elsewhere (a
// store's record), woken by the next round or its deadline. Either way it is listed, counted
// against the limits, cancelled and extended alike.
type Member interface {
	ID() string
	Snapshot() elicitation.Snapshot
	Cancel(reason elicitation.Reason) error
	Extend(d time.Duration) (time.Time, error)
}

// entry is one member in byID: 40 bytes a slot with its key, which every open question
// holds (BenchmarkLiveQuestions), so its owner's name is the owner's.
type entry struct {
	m     Member
	owner *owner
}

type owner struct {
	name    string
	live    map[string]Member
	limiter *rate.Limiter // nil when there is no per-owner limit
}

type totals struct {
	started     uint64
	completed   uint64
	timedOut    uint64
	cancelled   [elicitation.NumReasons]uint64
	rateLimited uint64
	tooMany     uint64
}

// New returns an empty registry with cfg's limits. It panics if cfg.Rate is positive and
// cfg.Burst is not, since no start could ever be allowed.
func New(cfg Config) *Registry {
	if cfg.Rate > 0 && cfg.Burst < 1 {
		panic("registry: a positive Rate needs a Burst of at least 1")
	}
	r := &Registry{
		clk:     cfg.Clock,
		rate:    cfg.Rate,
		burst:   cfg.Burst,
		maxLive: cfg.MaxLive,
		maxAsl:  cfg.MaxAsleep,
		onEnd:   cfg.OnEnd,
		byID:    make(map[string]entry),
		byOwner: make(map[string]*owner),
		sweepAt: ownerSlack,
	}
	if r.clk == nil {
		r.clk = clock.New()
	}
	r.env = elicitation.Env{Clock: r.clk, OnEnd: r.finished, Group: &r.actors}
	return r
}

// Start checks the limits for owner and, if they allow it, starts an elicitation for spec
// under a fresh id. A refusal (a bad spec, ErrClosed, ErrTooManyLive or a *RateLimitError)
// starts nothing and uses none of the owner's quota.
func (r *Registry) Start(ownerID string, spec elicitation.Spec) (*elicitation.Elicitation, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	id := rand.Text()
	now := r.clk.Now()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if err := r.full(); err != nil {
		return nil, err
	}
	o := r.byOwner[ownerID]
	if o == nil && len(r.byOwner) >= r.sweepAt {
		r.sweepOwners(now)
	}
	if o == nil {
		o = &owner{name: ownerID, live: make(map[string]Member)}
		if r.rate > 0 {
			o.limiter = rate.NewLimiter(r.rate, r.burst)
		}
		r.byOwner[ownerID] = o
	}
	if o.limiter != nil && !o.limiter.AllowN(now, 1) {
		r.totals.rateLimited++
		return nil, &RateLimitError{Owner: ownerID, RetryAfter: retryAfter(o.limiter, now)}
	}
	for _, taken := r.byID[id]; taken; _, taken = r.byID[id] {
		id = rand.Text() // 128 random bits: never in practice, but never a shared id either
	}
	e, err := elicitation.Start(id, spec, r.env)
	if err != nil {
		return nil, err // unreachable: spec was checked above
	}
	r.byID[id] = entry{m: e, owner: o}
	o.live[id] = e
	r.totals.started++
	return e, nil
}

// full is ErrTooManyLive, counted, if a cap is reached (r.mu held).
func (r *Registry) full() error {
	if awake := len(r.byID) - r.asleep; r.maxLive > 0 && awake >= r.maxLive {
		r.totals.tooMany++
		return fmt.Errorf("%w: %d are awake, the limit is %d", ErrTooManyLive, awake, r.maxLive)
	}
	if r.maxAsl > 0 && r.asleep >= r.maxAsl {
		r.totals.tooMany++
		return fmt.Errorf("%w: %d wait asleep, the limit is %d", ErrTooManyLive, r.asleep, r.maxAsl)
	}
	return nil
}

// sleeping reports whether m is a hibernating stand-in rather than an actor.
func sleeping(m Member) bool {
	_, actor := m.(*elicitation.Elicitation)
	return !actor
}

// ErrTaken: Resume's id is held by another member.
var ErrTaken = errors.New("registry: that id is held")

// Resume starts the actor of a question asked before under id (it hibernated, or another
// node asked it), for owner: it keeps its id, and it is not a new start, so neither the
// owner's rate nor Stats' started counts it. Only a shut-down registry (ErrClosed) or
// another member under id (ErrTaken) refuses it.
func (r *Registry) Resume(ownerID, id string, spec elicitation.Spec) (*elicitation.Elicitation, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	var e *elicitation.Elicitation
	err := r.place(ownerID, id, func() (Member, error) {
		var err error
		e, err = elicitation.Start(id, spec, r.env) // no error: spec was checked above
		return e, err
	})
	return e, err
}

// Adopt holds m, a hibernating question's stand-in that no actor here preceded (this node
// takes over the sleeping questions of a node that died), for owner, until Drop: it is not
// a new start. ErrClosed, or ErrTaken if a member is held under its id.
func (r *Registry) Adopt(ownerID string, m Member) error {
	return r.place(ownerID, m.ID(), func() (Member, error) { return m, nil })
}

// place holds the member newMember returns under id, for owner, unless the registry is closed or
// id is held; it is not a start (no quota, not counted).
func (r *Registry) place(ownerID, id string, newMember func() (Member, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if _, taken := r.byID[id]; taken {
		return fmt.Errorf("%w: %q", ErrTaken, id)
	}
	m, err := newMember()
	if err != nil {
		return err
	}
	o := r.ownerOf(ownerID)
	r.byID[id] = entry{m: m, owner: o}
	o.live[id] = m
	if sleeping(m) {
		r.asleep++
	}
	return nil
}

// ownerOf returns owner's record, made if there is none (r.mu held).
func (r *Registry) ownerOf(ownerID string) *owner {
	o := r.byOwner[ownerID]
	if o == nil {
		o = &owner{name: ownerID, live: make(map[string]Member)}
		if r.rate > 0 {
			o.limiter = rate.NewLimiter(r.rate, r.burst)
		}
		r.byOwner[ownerID] = o
	}
	return o
}

// Hibernate makes s take the place of the live actor e when e ends: the caller then ends e
// (cancels it), and e's end is not the question's (it is not counted, and OnEnd does not
// hear it). s stays, listed and counted against the limits as e was, until Drop. It
// reports false if e is not live here.
func (r *Registry) Hibernate(e *elicitation.Elicitation, s Member) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ent, ok := r.byID[e.ID()]
	if !ok || ent.m != Member(e) || s.ID() != e.ID() {
		return false
	}
	if r.sleeps == nil {
		r.sleeps = map[string]Member{}
	}
	r.sleeps[e.ID()] = s
	return true
}

// Drop removes s, a hibernating member (Hibernate), if it is still held: it was woken (its
// actor resumes here or on another node), or, with o, its question ended so, which counts
// and OnEnd hears as an actor's end. It reports whether s was held.
func (r *Registry) Drop(s Member, o *elicitation.Outcome) bool {
	r.mu.Lock()
	ent, ok := r.byID[s.ID()]
	if !ok || ent.m != s {
		r.mu.Unlock()
		return false
	}
	delete(r.byID, s.ID())
	delete(ent.owner.live, s.ID())
	if sleeping(s) {
		r.asleep--
	}
	if o != nil {
		r.count(*o)
	}
	r.mu.Unlock()
	if o != nil && r.onEnd != nil {
		r.onEnd(ent.owner.name, *o)
	}
	return true
}

// Admits reports whether Start for owner would pass the limits now, without starting
// anything or using any of the owner's quota, so a caller can refuse before doing costly
// work for a start (compiling an agent's form, say). It returns the error Start would:
// ErrClosed, ErrTooManyLive or a *RateLimitError; a refusal is counted in Stats as
// Start's is. It reserves nothing: Start checks the limits again, and may still refuse.
func (r *Registry) Admits(ownerID string) error {
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if err := r.full(); err != nil {
		return err
	}
	if o := r.byOwner[ownerID]; o != nil && o.limiter != nil && o.limiter.TokensAt(now) < 1 {
		r.totals.rateLimited++
		return &RateLimitError{Owner: ownerID, RetryAfter: retryAfter(o.limiter, now)}
	}
	return nil
}

// sweepOwners forgets owners with nothing live and a full bucket: their records hold nothing
// worth keeping. Owners stay after their last elicitation ends (an owner usually starts
// another soon, and keeping it saves two allocations a start), so this bounds them instead:
// it runs when the owners outnumber the next threshold, which it sets to twice what remains,
// so its cost per start stays constant. r.mu is held.
func (r *Registry) sweepOwners(now time.Time) {
	for name, o := range r.byOwner {
		if len(o.live) == 0 && (o.limiter == nil || o.limiter.TokensAt(now) >= float64(r.burst)) {
			delete(r.byOwner, name)
		}
	}
	r.sweepAt = 2*len(r.byOwner) + ownerSlack
}

// ownerSlack is how many owner records may pile up before the first sweep.
const ownerSlack = 1024

// retryAfter is how long until lim holds a whole token again, to the nearest millisecond
// (and at least one): the token count is a float, and a retry-after is advice for a person.
func retryAfter(lim *rate.Limiter, now time.Time) time.Duration {
	secs := (1 - lim.TokensAt(now)) / float64(lim.Limit())
	return max(time.Duration(math.Round(secs*1000))*time.Millisecond, time.Millisecond)
}

// finished is every elicitation's OnEnd hook: it runs on the actor's goroutine once the
// outcome is fixed, and removes the elicitation before its Done channel closes.
func (r *Registry) finished(o elicitation.Outcome) {
	r.mu.Lock()
	ent, ok := r.byID[o.ID]
	if !ok {
		r.mu.Unlock()
		return // unreachable: every actor the registry starts is in byID until it ends
	}
	if s, ok := r.sleeps[o.ID]; ok {
		// Hibernated: its stand-in takes its place; the question has not ended.
		delete(r.sleeps, o.ID)
		r.byID[o.ID] = entry{m: s, owner: ent.owner}
		ent.owner.live[o.ID] = s
		r.asleep++
		r.mu.Unlock()
		return
	}
	defer func() {
		r.mu.Unlock()
		if r.onEnd != nil {
			r.onEnd(ent.owner.name, o)
		}
	}()
	delete(r.byID, o.ID)
	delete(ent.owner.live, o.ID)
	r.count(o)
}

// count counts o, an end (r.mu held).
func (r *Registry) count(o elicitation.Outcome) {
	switch o.State {
	case elicitation.Completed:
		r.totals.completed++
	case elicitation.TimedOut:
		r.totals.timedOut++
	case elicitation.Cancelled:
		r.totals.cancelled[o.Reason]++
	}
}

// Owner returns the owner of the live elicitation id.
func (r *Registry) Owner(id string) (owner string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ent, ok := r.byID[id]
	if !ok {
		return "", false
	}
	return ent.owner.name, true
}

// owned returns owner's live elicitation id; another owner's is not found, so the ids of
// others cannot even be confirmed.
func (r *Registry) owned(owner, id string) (Member, error) {
	r.mu.Lock()
	ent, ok := r.byID[id]
	r.mu.Unlock()
	if !ok || ent.owner.name != owner {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return ent.m, nil
}

// Member returns owner's member id (a live actor, or a hibernating stand-in); another
// owner's is ErrNotFound, as Cancel's.
func (r *Registry) Member(owner, id string) (Member, error) { return r.owned(owner, id) }

// Len returns the number of live elicitations.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// List returns snapshots of owner's live elicitations, oldest first, keeping only those in
// one of states when any are given.
func (r *Registry) List(owner string, states ...elicitation.State) []elicitation.Snapshot {
	r.mu.Lock()
	var live []Member
	if o := r.byOwner[owner]; o != nil {
		live = make([]Member, 0, len(o.live))
		for _, e := range o.live {
			live = append(live, e)
		}
	}
	r.mu.Unlock()

	out := make([]elicitation.Snapshot, 0, len(live))
	for _, e := range live {
		s := e.Snapshot()
		if len(states) == 0 || slices.Contains(states, s.State) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b elicitation.Snapshot) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Cancel ends owner's live elicitation id with reason and returns once it has left the
// registry. An id that is not live, or is another owner's, is ErrNotFound; one that ended
// meanwhile is elicitation.ErrFinished.
func (r *Registry) Cancel(owner, id string, reason elicitation.Reason) error {
	e, err := r.owned(owner, id)
	if err != nil {
		return err
	}
	return e.Cancel(reason)
}

// Extend moves the deadline of owner's live elicitation id d later, within its lifetime,
// and returns the new deadline. Errors are Cancel's.
func (r *Registry) Extend(owner, id string, d time.Duration) (time.Time, error) {
	e, err := r.owned(owner, id)
	if err != nil {
		return time.Time{}, err
	}
	return e.Extend(d)
}

// CloseOwner cancels every live elicitation of owner with reason client gone, forgets the
// owner, and returns how many it cancelled once all of them have left the registry. Other
// owners are untouched.
func (r *Registry) CloseOwner(owner string) int {
	r.mu.Lock()
	o := r.byOwner[owner]
	delete(r.byOwner, owner)
	var live []Member
	if o != nil {
		for _, e := range o.live {
			live = append(live, e)
		}
	}
	r.mu.Unlock()
	return cancelAll(live, elicitation.ClientGone)
}

// Shutdown refuses new starts, cancels every live elicitation with reason shutdown, and
// waits until every actor goroutine has returned or ctx ends (then it returns ctx's error).
// A hibernating member is not cancelled: its question lives where its state is (another
// node, or this one started again, wakes it); it is dropped, and its Release method, if it
// has one, called.
func (r *Registry) Shutdown(ctx context.Context) error { return r.Close(ctx, elicitation.Shutdown) }

// Close is Shutdown with another reason: ClientGone when the one client a server had has
// gone, so that an elicitation a call in flight was about to start is refused rather than
// started and ended as a shutdown.
func (r *Registry) Close(ctx context.Context, reason elicitation.Reason) error {
	r.mu.Lock()
	r.closed = true
	live := make([]*elicitation.Elicitation, 0, len(r.byID))
	for id, ent := range r.byID {
		if e, ok := ent.m.(*elicitation.Elicitation); ok {
			live = append(live, e)
			continue
		}
		delete(r.byID, id)
		delete(ent.owner.live, id)
		r.asleep--
		if rel, ok := ent.m.(interface{ Release() }); ok {
			rel.Release() // its timer, say
		}
	}
	r.mu.Unlock()

	// No helper goroutine: ctx bounds each cancel, even one an actor is slow to take (a
	// prompter that blocks, say). A cancel returns once the outcome is fixed (ErrFinished:
	// it already was).
	for _, e := range live {
		if err := e.CancelContext(ctx, reason); err != nil && !errors.Is(err, elicitation.ErrFinished) {
			return err
		}
	}
	// Every actor has fixed its outcome; each returns right after, so this wait is short.
	r.actors.Wait()
	return nil
}

// cancelAll cancels each elicitation and counts those it ended (others had already ended).
func cancelAll(live []Member, reason elicitation.Reason) int {
	n := 0
	for _, e := range live {
		if e.Cancel(reason) == nil {
			n++
		}
	}
	return n
}
