package bare

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pullEra is the first protocol version whose tools ask by returning input requests.
const pullEra = "2026-07-28"

// Handler serves Server over Streamable HTTP the way elicitd --http does: a client of
// 2025-11-25 or earlier gets a session, whose tools ask with Elicit over the call's response
// stream (push); a 2026-07-28 client is served statelessly, its tools returning input
// requests with a requestState and answering the retry (pull), since go-sdk serves that era
// only from a stateless handler. The era is read from each request's Mcp-Protocol-Version
// header. Sessions end when their client deletes them; there is no idle timeout.
func Handler() http.Handler {
	s := Server()
	get := func(*http.Request) *mcp.Server { return s }
	push := mcp.NewStreamableHTTPHandler(get, nil)
	pull := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= pullEra {
			pull.ServeHTTP(w, r)
			return
		}
		push.ServeHTTP(w, r)
	})
}
