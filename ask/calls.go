package ask

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callStore is the one place the Elicitor keeps its pull-era calls by id: the live ones a
// retry resumes, and, for a while, how ended ones ended, so that a late retry hears why.
// It is narrow so that a store shared by several nodes could later sit under it.
type callStore interface {
	// add makes c live under its id.
	add(c *call)
	// addNew makes c live under its id unless a call is live under it: then it returns that
	// one, and false.
	addNew(c *call) (held *call, added bool)
	// find returns the live call with that id, or else how a recently ended one ended
	// (zero when the id is unknown or long gone).
	find(id string) (c *call, e endedCall)
	// end drops c if it is still the live call of its id; with remember it keeps how it
	// ended.
	end(c *call, e endedCall, remember bool)
	// each calls f for every live call.
	each(f func(*call))
}

// endedCall is how a call ended: how its last question ended, and its last claimed round
// with the digest of the response that claimed it and what that got, encoded. Up to
// recentWindow of them are kept, and the collector scans what is kept on every cycle:
// as digests and bytes they cost it nothing (as results, a form's answers in maps, they
// were most of what it scanned).
type endedCall struct {
	how   string
	round int    // 0: none is kept
	sum   string // the digest of the response that claimed round
	sent  []byte // what that round got (encodeResult)
}

// keep records that the last claimed round, claimed by resp, got sent (enc: sent encoded,
// if it was already): an identical resend gets it again. A result that does not encode is
// not kept (the resend is told the call has ended).
func (e *endedCall) keep(resp mcp.InputResponse, sent result, enc []byte) {
	b, err := enc, error(nil)
	if b == nil {
		b, err = encodeResult(sent)
	}
	if err != nil {
		e.round = 0
		return
	}
	if e.sum == "" {
		e.sum = responseSum(resp)
	}
	e.sent = b
}

// again returns what the kept round got, if a retry for round bringing resp is its
// identical resend.
func (e endedCall) again(round int, resp mcp.InputResponse, has bool) (result, bool) {
	if !has || e.sent == nil || e.round != round || responseSum(resp) != e.sum {
		return result{}, false
	}
	r, _, err := decodeResult(e.sent)
	return r, err == nil
}

// recentWindow is how many ended pull-era calls are remembered for a late retry.
const recentWindow = 1024

// memCalls is the in-memory callStore.
type memCalls struct {
	live sync.Map // id -> *call

	mu    sync.Mutex
	ended map[string]endedCall // by id
	order []string             // ended's keys, oldest first
}

var _ callStore = (*memCalls)(nil)

func (s *memCalls) add(c *call) { s.live.Store(c.id, c) }

func (s *memCalls) addNew(c *call) (*call, bool) {
	v, loaded := s.live.LoadOrStore(c.id, c)
	return v.(*call), !loaded
}

func (s *memCalls) find(id string) (*call, endedCall) {
	if v, ok := s.live.Load(id); ok {
		return v.(*call), endedCall{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return nil, s.ended[id]
}

func (s *memCalls) end(c *call, e endedCall, remember bool) {
	if !s.live.CompareAndDelete(c.id, c) || !remember {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = map[string]endedCall{}
	}
	if len(s.order) == recentWindow {
		delete(s.ended, s.order[0])
		s.order = s.order[1:]
	}
	s.ended[c.id], s.order = e, append(s.order, c.id)
}

func (s *memCalls) each(f func(*call)) {
	for _, v := range s.live.Range {
		f(v.(*call))
	}
}
