package ask

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/elicitation"
)

// streamHeader names, on a POST that WatchStreams let through, the response stream it opens.
// WatchStreams sets it and removes any value a client sent: only the server names streams.
const streamHeader = "Elicitd-Stream"

// WatchStreams wraps a go-sdk Streamable HTTP handler that serves el's server, so that a tool
// call whose response stream ends before its result was written, because the client dropped
// the connection under its POST, ends its open questions as client_gone at once, instead of
// leaving the person to answer a form whose answer nobody can receive:
//
//   - a push-era call (2025-11-25 and earlier), whose session may stay open: the SDK does not
//     cancel such a call, and without an EventStore its result cannot be delivered later;
//   - a 2026-07-28 request that waits: a first call whose handler has not asked yet, or a
//     retry waiting for elicitd's page to be sent (a call a client simply does not come back
//     to ends at its deadline, or as abandoned with the opt-in Options.PullIdle).
//
// Serve the handler without an EventStore: a stream a client could resume has not ended.
func (el *Elicitor) WatchStreams(next http.Handler) http.Handler {
	el.watching.Store(true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(streamHeader)
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		id := strconv.FormatUint(el.streamSeq.Add(1), 36)
		st := &stream{}
		el.streams.Store(id, st)
		r.Header.Set(streamHeader, id)
		// The request's context ends when the client drops the connection, which may be
		// before next returns: a stateless request's session waits for its handler to return.
		end := func() {
			el.streams.Delete(id)
			st.end()
		}
		stop := context.AfterFunc(r.Context(), end)
		defer func() {
			if stop() {
				end()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// stream is one POST's response stream, and the calls that would answer on it.
type stream struct {
	mu    sync.Mutex
	ended bool
	calls []context.CancelCauseFunc
}

// streamGone is the cause a call's context ends with when its stream has ended.
var streamGone = endReason{elicitation.ClientGone}

// watch returns the context req is served under: ctx, ended with cause client_gone if
// req came on a stream WatchStreams watches and that stream ends first. done releases it.
func (el *Elicitor) watch(ctx context.Context, req *mcp.CallToolRequest) (_ context.Context, done func()) {
	var id string
	if req.Extra != nil {
		id = req.Extra.Header.Get(streamHeader)
	}
	if id == "" || !el.watching.Load() {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	// A stream that is forgotten ended before its call got here. A stream ends on its own
	// only once every call on it is answered, and this one has not started: the client
	// dropped it.
	if v, ok := el.streams.Load(id); !ok || !v.(*stream).join(cancel) {
		cancel(streamGone)
	}
	return ctx, func() { cancel(nil) }
}

// join adds a call's cancel to the stream's, unless the stream has ended already.
func (st *stream) join(cancel context.CancelCauseFunc) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.ended {
		st.calls = append(st.calls, cancel)
	}
	return !st.ended
}

// end ends the calls of a stream that has ended. A call that has returned already, because its
// result was delivered, is not affected.
func (st *stream) end() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ended = true
	for _, cancel := range st.calls {
		cancel(streamGone)
	}
	st.calls = nil
}
