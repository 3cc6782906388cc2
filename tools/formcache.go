package tools

import (
	"crypto/sha256"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/elicitd/elicitd/validator"
)

// formKey names a form or schema by a SHA-256 of its kind and its JSON as sent.
type formKey [sha256.Size]byte

// formCache keeps the forms ask_user compiled last, bounded by their estimated cost in bytes
// (validator.Compiled.Cost), not by their number: agents tend to ask the same question again,
// and compiling is most of ask_user's own work on a call, but forms come from agents and a
// count alone would let a few large ones hold a great deal of memory. A form costing more
// than an eighth of the budget is never kept. Safe for concurrent use.
type formCache struct {
	mu     sync.Mutex
	lru    *simplelru.LRU[formKey, *validator.Compiled]
	cost   int
	budget int
}

// Default bounds of the form cache.
const (
	formCacheBudget  = 8 << 20
	formCacheEntries = 1024
)

func newFormCache(budget, entries int) *formCache {
	c := &formCache{budget: budget}
	c.lru, _ = simplelru.NewLRU(entries, func(_ formKey, f *validator.Compiled) { c.cost -= f.Cost() }) // errs only for a size < 1
	return c
}

func (c *formCache) get(k formKey) (*validator.Compiled, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

func (c *formCache) add(k formKey, f *validator.Compiled) {
	cost := f.Cost()
	if cost > c.budget/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(k) {
		return
	}
	c.lru.Add(k, f) // may evict the oldest, which subtracts its cost
	c.cost += cost
	for c.cost > c.budget {
		c.lru.RemoveOldest()
	}
}

// size returns the cached forms' number and total cost.
func (c *formCache) size() (n, cost int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.cost
}
