package registry

import "github.com/elicitd/elicitd/elicitation"

// Stats counts what a registry has done since it was made, and what is live now.
type Stats struct {
	Started     uint64            `json:"started"`
	Completed   uint64            `json:"completed"`
	TimedOut    uint64            `json:"timed_out"`
	Cancelled   map[string]uint64 `json:"cancelled"` // by reason; only reasons seen
	RateLimited uint64            `json:"refused_rate_limited"`
	TooManyLive uint64            `json:"refused_too_many_live"`
	Live        map[string]int    `json:"live"`   // by state; every non-terminal state listed
	Asleep      int               `json:"asleep"` // of the live, those hibernating (no goroutine)
	Owners      int               `json:"owners"` // owner records kept (live ones and recent idle ones)
}

// Stats returns the counters and the live elicitations by state.
func (r *Registry) Stats() Stats {
	r.mu.Lock()
	t := r.totals
	owners, asleep := len(r.byOwner), r.asleep
	live := make([]Member, 0, len(r.byID))
	for _, ent := range r.byID {
		live = append(live, ent.m)
	}
	r.mu.Unlock()

	s := Stats{
		Started:     t.started,
		Completed:   t.completed,
		TimedOut:    t.timedOut,
		RateLimited: t.rateLimited,
		TooManyLive: t.tooMany,
		Owners:      owners,
		Asleep:      asleep,
		Cancelled:   map[string]uint64{},
		Live:        map[string]int{elicitation.Pending.String(): 0, elicitation.Active.String(): 0},
	}
	for reason, n := range t.cancelled {
		if n > 0 {
			s.Cancelled[elicitation.Reason(reason).String()] = n
		}
	}
	for _, e := range live {
		// An actor may be removing itself right now: count only what is still live.
		if st := e.Snapshot().State; !st.Terminal() {
			s.Live[st.String()]++
		}
	}
	return s
}
