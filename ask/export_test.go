package ask

import "sync"

// SetSleepHook sets a function that runs as a call falls asleep (between its sleeper
// entering the registry and its actor ending), and returns a function that unsets it.
func SetSleepHook(f func(questionID string)) (unset func()) {
	sleepHook = f
	return func() { sleepHook = nil }
}

// HeldRounds is how many calls' first rounds el holds back (Options.Linger).
func (el *Elicitor) HeldRounds() int { return el.held.len() }

// ListedSchemas is how many full input schemas el keeps for tools/list (listing.go).
func (el *Elicitor) ListedSchemas() (n int) {
	el.listed.Range(func(_, names any) bool {
		names.(*sync.Map).Range(func(any, any) bool { n++; return true })
		return true
	})
	return n
}
