package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tapSchema is a requested schema whose properties are not in alphabetical order, and
// tapDecoded the map the SDK decodes it to.
const tapSchema = `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"}}}`

var tapDecoded = map[string]any{"type": "object", "properties": map[string]any{
	"alpha": map[string]any{"type": "string"}, "zeta": map[string]any{"type": "string"}}}

// Over Streamable HTTP the requested schemas are recorded from the response bodies as the
// SDK reads them, however the bytes arrive: an event stream's events (their data joined
// across lines, as the SDK joins it), the last one ended by the stream's end, and JSON
// bodies whole.
func TestSchemaTapRecordsWhatTheSDKReads(t *testing.T) {
	request := `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","requestedSchema":` + tapSchema + `}}`
	half := strings.Index(request, `"params"`) // between two members: the newline joining the lines is whitespace
	cases := map[string]struct{ contentType, body string }{
		"an event":                            {"text/event-stream", ": ok\n\nevent: message\nid: 1\ndata: " + request + "\n\n"},
		"an event in lines, with CRLF":        {"text/event-stream", "id: 1\r\ndata: " + request[:half] + "\r\ndata:" + request[half:] + "\r\n\r\n"},
		"an event ended by the stream":        {"text/event-stream; charset=utf-8", "data: {}\n\ndata: " + request},
		"a JSON body":                         {"application/json", `{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"e":{"method":"elicitation/create","params":{"requestedSchema":` + tapSchema + `}}}}}`},
		"an event after one too large":        {"text/event-stream", "data: " + strings.Repeat("x", 2*len(request)) + "\ndata: more\n\ndata: " + request + "\n\n"},
		"an event after one with a long line": {"text/event-stream", "id: " + strings.Repeat("1", 2*len(request)) + "\n\ndata: " + request + "\n\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var s schemas
			body := readTapped(t, &s, c.contentType, c.body, 2*len(request)+16)
			assert.Equal(t, c.body, body, "the SDK reads the body as sent")
			raw, err := s.original(tapDecoded)
			require.NoError(t, err)
			assert.Equal(t, tapSchema, string(raw), "the schema as the server sent it")
		})
	}

	tooLarge := map[string]struct{ contentType, body string }{
		"an event":    {"text/event-stream", "data: " + request + "\n\n"},
		"a JSON body": {"application/json", request},
		"other types": {"text/plain", request},
	}
	for name, c := range tooLarge {
		t.Run("not recorded: "+name, func(t *testing.T) {
			var s schemas
			limit := len(request) - 1
			if c.contentType == "text/plain" {
				limit = 1 << 20
			}
			readTapped(t, &s, c.contentType, c.body, limit)
			raw, err := s.original(tapDecoded)
			require.NoError(t, err)
			assert.NotEqual(t, tapSchema, string(raw), "not recorded: the SDK's order")
		})
	}
}

// readTapped reads body, sent with contentType, through a schemaTap recording into s with
// the given limit, a byte at a time; it returns what was read.
func readTapped(t *testing.T, s *schemas, contentType, body string, limit int) string {
	t.Helper()
	base := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))}, nil
	})
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
	require.NoError(t, err)
	res, err := schemaTap{base, s}.RoundTrip(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if tb, ok := res.Body.(*tappedBody); ok {
		tb.limit = limit
	}
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(got)
}
