package ask

import "sync"

// inflight counts the tool calls being handled, so Close can wait for them. Unlike a
// sync.WaitGroup it may be waited on while calls keep arriving (a client still sending while
// the server shuts down): a WaitGroup panics when Add races a Wait at zero.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n reaches 0; nil until someone waits
}

func (c *inflight) begin() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *inflight) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// none returns a channel that is closed once no call is being handled (at once, if none is).
func (c *inflight) none() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	return c.idle
}
