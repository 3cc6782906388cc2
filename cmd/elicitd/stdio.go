package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
)

// lineTransport is MCP's stdio transport as the spec words it: newline-delimited JSON-RPC,
// one message a line. Unlike go-sdk's IOTransport, whose streaming decoder ends the session at
// the first bad frame (and lets a truncated object swallow the frames after it), a bad line
// here is answered and forgotten:
//
//   - not UTF-8, not JSON: a -32700 parse error (id null);
//   - JSON but not one JSON-RPC message (a batch, a bare value, a message of no known shape):
//     a -32600 invalid request, with the request's id when it has one;
//   - longer than maxFrame bytes: -32600 too, with the id when it appears early in the line;
//     and when the line was a reply to one of elicitd's own requests (an answer too large
//     to carry), that request gets a -32600 error reply in place of the answer, so it ends
//     at once instead of waiting for one.
//
// Every other line reaches the SDK as it came, and the session goes on.
type lineTransport struct {
	in       io.Reader
	out      io.Writer
	maxFrame int
	log      *slog.Logger

	mu   sync.Mutex
	conn *lineConn
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.out, log: t.log, incoming: make(chan incoming), closed: make(chan struct{}),
		writes: make(chan lineWrite), cut: make(chan struct{})}
	if d, ok := t.out.(deadlineWriter); ok && d.SetWriteDeadline(time.Time{}) == nil {
		c.direct, c.turn = d, make(chan struct{}, 1)
	} else {
		go c.writeLines()
	}
	go c.readLines(bufio.NewReaderSize(t.in, 64<<10), t.maxFrame)
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, nil
}

// hangUpWriteGrace is how long the replies still owed when a signalled exit hangs up may
// take to be written: a client that reads gets them; one that stopped reading cannot hold
// the exit.
const hangUpWriteGrace = 300 * time.Millisecond

// hangUp ends the session as if the input had ended: the server's Run returns as it does at
// EOF, without the error a cancelled context is logged with. The replies still owed get
// hangUpWriteGrace to be written; then every write not done fails, the one blocked on a full
// stdout included, so Run returns even when the client has stopped reading.
func (t *lineTransport) hangUp() {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		c.stopReading()
		c.cutAfter(hangUpWriteGrace)
	}
}

type incoming struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	out io.Writer
	log *slog.Logger

	// direct, when out's blocked writes can be interrupted (a pipe or socket in non-blocking
	// mode, see pollable), is out: each caller writes its message itself, in its turn,
	// and the cut interrupts a write blocked on a full stdout through its deadline. That saves
	// two goroutine hand-offs a message, which at one caller cost a pull-era call 3 futex calls,
	// 5 context switches and about 100 us of CPU (perf stat and the peers harness beside raw
	// go-sdk).
	direct deadlineWriter
	turn   chan struct{} // with direct: held (one slot, full) by the caller writing

	// writes, when out cannot be interrupted, carries each message, whole, to writeLines, the
	// one goroutine that writes out: a write blocked there (stdout full, the client not
	// reading) holds no caller once the writes are cut.
	writes  chan lineWrite
	pending atomic.Int64 // writes handed in and not yet done or failed

	incoming  chan incoming
	closed    chan struct{} // reading has ended
	closeOnce sync.Once

	cut      chan struct{} // writing has ended: writes not done fail at once
	cutOnce  sync.Once
	cutMu    sync.Mutex
	cutTimer *time.Timer
}

// deadlineWriter is a writer whose blocked Write a deadline interrupts: an *os.File that the
// runtime polls (a pipe or socket in non-blocking mode), a net.Conn.
type deadlineWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// lineWrite is one message for writeLines, and where its outcome goes.
type lineWrite struct {
	b    []byte
	done chan error // buffered: writeLines never waits on a caller that gave up
}

// errWritesCut is what a write not done when the writes were cut returns. It is an io.EOF
// too: the session ends as at the end of its input, the cut having been logged already.
var errWritesCut = fmt.Errorf("%w: stdout: the reply was not written, the client is not reading (%w)", mcp.ErrConnectionClosed, io.EOF)

// Frame errors, as JSON-RPC 2.0 numbers them.
const (
	codeParseError     = jsonrpc.CodeParseError
	codeInvalidRequest = jsonrpc.CodeInvalidRequest
)

// frameTooLargeMessage marks the error reply that stands in for a reply too large to read.
const frameTooLargeMessage = ask.FrameTooLarge

// readLines reads one line at a time until the input ends, handing each good message to
// Read and answering each bad one.
func (c *lineConn) readLines(r *bufio.Reader, maxFrame int) {
	for {
		line, over, err := readLine(r, maxFrame)
		if len(line) > 0 || over {
			if msg := c.frame(line, over, maxFrame); msg != nil {
				select {
				case c.incoming <- incoming{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			select {
			case c.incoming <- incoming{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine returns the next line without its line ending. A line longer than maxFrame is
// read to its end and dropped, all but its first 64 KiB (over is then true).
func readLine(r *bufio.Reader, maxFrame int) (line []byte, over bool, err error) {
	const keep = 64 << 10
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > maxFrame {
				over = true
				line = line[:min(len(line), keep)]
				line = append(line, chunk[:min(len(chunk), keep-len(line))]...)
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && len(line) == 0 && !over:
			return nil, false, err
		case err != nil:
			return bytes.TrimRight(line, "\r\n"), over, nil // the last line, unterminated; EOF next
		}
		return bytes.TrimRight(line, "\r\n"), over, nil
	}
}

// frame turns one line into a message for the SDK, or answers it and returns nil.
func (c *lineConn) frame(line []byte, over bool, maxFrame int) jsonrpc.Message {
	if over {
		id, isRequest := leadingID(line)
		c.log.Warn("refused a JSON-RPC message over the frame limit", "limit_bytes", maxFrame)
		if id.IsValid() && !isRequest {
			// A reply to one of our requests: that request fails at once, as if the client
			// had answered with this error.
			return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeInvalidRequest, Message: frameTooLargeMessage}}
		}
		c.reply(id, codeInvalidRequest, fmt.Sprintf("%s (%d bytes)", frameTooLargeMessage, maxFrame))
		return nil
	}
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(trimmed) == 0:
		return nil // a blank line: nothing was sent
	case !utf8.Valid(trimmed) || !json.Valid(trimmed):
		c.log.Warn("refused a line that is not JSON")
		c.reply(jsonrpc.ID{}, codeParseError, "parse error: each line must be one JSON-RPC message in UTF-8 JSON")
		return nil
	case trimmed[0] == '[':
		c.log.Warn("refused a JSON-RPC batch")
		c.reply(jsonrpc.ID{}, codeInvalidRequest, "invalid request: batches are not supported; send one message a line")
		return nil
	}
	msg, err := decodeFrame(trimmed)
	if err != nil {
		id, _ := leadingID(trimmed)
		c.log.Warn("refused a line that is not a JSON-RPC message")
		c.reply(id, codeInvalidRequest, "invalid request: not a JSON-RPC 2.0 request, notification or response")
		return nil
	}
	return msg
}

// decodeFrame decodes one JSON value as a JSON-RPC 2.0 message: a request or notification
// (it has a method), or a response (an id with exactly one of result and error). line must
// be valid JSON (frame checks it first).
//
// It accepts and refuses what jsonrpc.DecodeMessage does, and decodes to the same message
// (TestDecodeFrameIsTheSDKsDecoder), but reads the envelope itself, its keys matched exactly
// as the SDK matches them: the SDK's decoder allocates a 32 KiB buffer for the message and
// another for its method, and those were a third of the memory a 2026-07-28 call allocated,
// which set how often the collector ran. It reads it in one pass over the valid line
// (frameMembers), where decoding it into a map with encoding/json scanned it twice more
// and copied every value (5.6% of a stdio server's CPU in a pull-era call).
func decodeFrame(line []byte) (jsonrpc.Message, error) {
	if tooDeep(line, maxFrameDepth) {
		return nil, fmt.Errorf("nested deeper than %d", maxFrameDepth)
	}
	f, err := frameMembers(line)
	if err != nil {
		return nil, err
	}
	if string(f.jsonrpc) != `"2.0"` { // the quick path; an escaped "2.0" is decoded
		var version string
		if err := json.Unmarshal(f.jsonrpc, &version); err != nil || version != "2.0" {
			return nil, fmt.Errorf(`"jsonrpc" must be "2.0"`)
		}
	}
	var rawID any
	if f.id != nil {
		if err := json.Unmarshal(f.id, &rawID); err != nil {
			return nil, err
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if f.hasMethod {
		method, ok := plainString(f.method)
		if !ok {
			if err := json.Unmarshal(f.method, &method); err != nil {
				return nil, err
			}
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: f.params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a response needs an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: f.result}
	if raw := f.error; raw != nil && string(raw) != "null" {
		if resp.Error, err = decodeWireError(raw); err != nil {
			return nil, err
		}
	}
	if (len(resp.Result) > 0) == (resp.Error != nil) {
		return nil, errors.New("not a request, notification or response: a response needs exactly one of result and error")
	}
	return resp, nil
}

// envelope is the members of a JSON-RPC message decodeFrame reads, each the raw JSON of
// the last member of that name, as decoding into a map keeps it; nil when there is none.
type envelope struct {
	jsonrpc, id, method, params, result, error json.RawMessage
	hasMethod                                  bool
}

// frameMembers reads the members of the JSON object line, which must be valid JSON, in one
// pass: a value's raw JSON is line's own bytes. It fails if line is not an object.
func frameMembers(line []byte) (envelope, error) {
	var f envelope
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return f, errors.New("a JSON-RPC message is an object")
	}
	i = skipSpace(line, i+1)
	for i < len(line) && line[i] == '"' {
		end, escaped := stringEnd(line, i)
		key := line[i+1 : end-1]
		if escaped {
			var k string
			if err := json.Unmarshal(line[i:end], &k); err != nil {
				return f, err
			}
			key = []byte(k)
		}
		i = skipSpace(line, end)
		if i == len(line) || line[i] != ':' {
			return f, errors.New("not a JSON object")
		}
		i = skipSpace(line, i+1)
		start := i
		i = valueEnd(line, i)
		value := json.RawMessage(line[start:i:i])
		switch string(key) {
		case "jsonrpc":
			f.jsonrpc = value
		case "id":
			f.id = value
		case "method":
			f.method, f.hasMethod = value, true
		case "params":
			f.params = value
		case "result":
			f.result = value
		case "error":
			f.error = value
		}
		if i = skipSpace(line, i); i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	if i == len(line) || line[i] != '}' {
		return f, errors.New("not a JSON object")
	}
	return f, nil
}

// skipSpace returns the index of the first byte from i on that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string that starts at b[i] (a quote), and
// whether it has escapes.
func stringEnd(b []byte, i int) (end int, escaped bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return len(b), escaped
}

// valueEnd returns the index just past the valid JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i == len(b) {
		return i
	}
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i, _ = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) { // a number, true, false or null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// plainString returns the JSON string raw decoded, if it is one with no escapes and in
// UTF-8 (as it then decodes to its own bytes).
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// decodeWireError decodes a response's error object, its keys matched exactly.
func decodeWireError(raw json.RawMessage) (*jsonrpc.Error, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	var e jsonrpc.Error
	for _, field := range []struct {
		key string
		dst any
	}{{"code", &e.Code}, {"message", &e.Message}} {
		if raw, ok := f[field.key]; ok {
			if err := json.Unmarshal(raw, field.dst); err != nil {
				return nil, err
			}
		}
	}
	e.Data = f["data"]
	return &e, nil
}

// maxFrameDepth is how deeply a message's objects and arrays may nest: the SDK's limit.
const maxFrameDepth = 1000

// tooDeep reports whether the JSON text b nests objects and arrays more than max deep.
func tooDeep(b []byte, max int) bool {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++ // the escaped character, a quote or a backslash included
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// leadingID finds the "id" of a JSON-RPC message from what can be read of its start, and
// whether a "method" came before the first value it could not read (a request).
func leadingID(prefix []byte) (id jsonrpc.ID, isRequest bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return id, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return id, isRequest
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return id, isRequest
		}
		switch key {
		case "id":
			if made, err := jsonrpc.MakeID(v); err == nil {
				id = made
			}
		case "method":
			isRequest = true
		}
	}
	return id, isRequest
}

// reply writes a JSON-RPC error response to a frame that cannot be handled.
func (c *lineConn) reply(id jsonrpc.ID, code int64, message string) {
	resp := struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: code, Message: message}}
	b, _ := json.Marshal(resp)               // plain data: cannot fail
	_ = c.writeLine(context.Background(), b) // a broken output ends the session through Write
}

// writeLine writes b and a newline, whole, and returns the write's error; or errWritesCut,
// without waiting on the write, once the writes are cut; or ctx's error if ctx ends before
// the write begins (once begun, it is not abandoned but to a cut: a message is whole).
func (c *lineConn) writeLine(ctx context.Context, b []byte) error {
	c.pending.Add(1)
	defer c.pending.Add(-1)
	if c.direct != nil {
		return c.writeDirect(ctx, append(b, '\n'))
	}
	w := lineWrite{b: append(b, '\n'), done: make(chan error, 1)}
	select {
	case c.writes <- w:
	case <-c.cut:
		return errWritesCut
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-w.done:
		return err
	case <-c.cut:
		return errWritesCut
	}
}

// writeDirect writes line itself once its turn comes, as writeLine promises.
func (c *lineConn) writeDirect(ctx context.Context, line []byte) error {
	select {
	case c.turn <- struct{}{}:
	case <-c.cut:
		return errWritesCut
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.turn }()
	select {
	case <-c.cut: // both were ready: the cut wins
		return errWritesCut
	default:
	}
	_, err := c.direct.Write(line)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errWritesCut
	}
	return err
}

// writeLines writes each message handed to it until the writes are cut. A write blocked then
// stays blocked until the process exits: this out cannot be interrupted (else see direct).
func (c *lineConn) writeLines() {
	for {
		select {
		case w := <-c.writes:
			_, err := c.out.Write(w.b)
			w.done <- err
		case <-c.cut:
			return
		}
	}
}

// cutWrites makes every write not done fail at once, and every later one.
func (c *lineConn) cutWrites() {
	c.cutOnce.Do(func() {
		c.cutMu.Lock()
		if c.cutTimer != nil {
			c.cutTimer.Stop()
		}
		c.cutMu.Unlock()
		if n := c.pending.Load(); n > 0 {
			// Logged before the cut, so it is out before the session (and the process) can end.
			c.log.Warn("exiting with replies unwritten: the client is not reading", "pending_writes", n)
		}
		close(c.cut)
		if c.direct != nil {
			// A write blocked on a full stdout fails now; a later one fails at once.
			_ = c.direct.SetWriteDeadline(time.Unix(1, 0))
		}
	})
}

// cutAfter cuts the writes after d, unless they are cut before.
func (c *lineConn) cutAfter(d time.Duration) {
	c.cutMu.Lock()
	defer c.cutMu.Unlock()
	select {
	case <-c.cut:
	default:
		if c.cutTimer == nil {
			c.cutTimer = time.AfterFunc(d, c.cutWrites)
		}
	}
}

// stopReading ends the input as its EOF would: Read returns io.EOF.
func (c *lineConn) stopReading() { c.closeOnce.Do(func() { close(c.closed) }) }

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case in := <-c.incoming:
		return in.msg, in.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	return c.writeLine(ctx, b)
}

// Close implements mcp.Connection: reading and writing end. The SDK closes a connection once
// nothing is in flight, so no write is lost. The reading goroutine ends when the input does
// (stdin cannot be interrupted), or at its next message.
func (c *lineConn) Close() error {
	c.stopReading()
	c.cutWrites()
	return nil
}

// SessionID implements mcp.Connection: stdio has one session and no id.
func (c *lineConn) SessionID() string { return "" }
