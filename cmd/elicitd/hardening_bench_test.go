package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/page/pagetest"
)

// Benchmarks of what elicitd --http holds under abuse: uploads to its page, abandoned
// sessions, idle connections. Each reports elicitd's resident memory (or open descriptors)
// as the figures of interest. Run them once each, without the race detector:
//
//	go test -run '^$' -bench 'BenchmarkPageUploadAttacks|BenchmarkAbandonedSessions|BenchmarkIdleConnections' -benchtime 1x ./cmd/elicitd/

const hbMiB = 1 << 20

// hbStatusBytes returns a memory figure of process pid from /proc/PID/status (key is
// "VmRSS" for now, "VmHWM" for the peak), in bytes.
func hbStatusBytes(t testing.TB, pid int, key string) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// hbRSSMiB is process pid's resident memory now (VmRSS), in MiB.
func hbRSSMiB(t testing.TB, pid int) float64 {
	return float64(hbStatusBytes(t, pid, "VmRSS")) / hbMiB
}

// hbPeakMiB is process pid's peak resident memory (VmHWM), in MiB.
func hbPeakMiB(t testing.TB, pid int) float64 {
	return float64(peakRSS(t, pid)) / hbMiB
}

// hbOpenFDs counts process pid's open file descriptors; -1 when /proc cannot say.
func hbOpenFDs(pid int) int {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(fds)
}

// hbBlock is 1 MiB of pseudo-random bytes, repeated to make the files uploaded: random
// enough that nothing sniffs them as a known type, cheap to send.
var hbBlock = sync.OnceValue(func() []byte {
	r := rand.New(rand.NewPCG(2026, 11))
	b := make([]byte, hbMiB)
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
})

// hbWriteFile writes a file of size bytes: hbBlock repeated, from an offset that seed picks,
// so that files differ.
func hbWriteFile(w io.Writer, size int64, seed int) error {
	blk := hbBlock()
	off := (seed * 7919) % len(blk)
	for size > 0 {
		chunk := blk[off:]
		if int64(len(chunk)) > size {
			chunk = chunk[:size]
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		size -= int64(len(chunk))
		off = 0
	}
	return nil
}

// hbForm is a submit of elicitd's page, as a browser sends it: multipart/form-data with the
// inputs first (the hidden CSRF input, the text fields), then the files.
type hbForm struct {
	inputs [][2]string // form name and value, in order
	files  []string    // form names of the file inputs
	size   int64       // of each file
}

const hbBoundary = "hardeningbenchboundary0123456789"

func (f hbForm) write(w io.Writer) error {
	mw := multipart.NewWriter(w)
	if err := mw.SetBoundary(hbBoundary); err != nil {
		return err
	}
	for _, in := range f.inputs {
		if err := mw.WriteField(in[0], in[1]); err != nil {
			return err
		}
	}
	for i, name := range f.files {
		fw, err := mw.CreateFormFile(name, fmt.Sprintf("scan-%02d.bin", i+1))
		if err != nil {
			return err
		}
		if err := hbWriteFile(fw, f.size, i); err != nil {
			return err
		}
	}
	return mw.Close()
}

// hbCounter counts what is written through it.
type hbCounter struct {
	w io.Writer // nil: discard
	n atomic.Int64
}

func (c *hbCounter) Write(p []byte) (int, error) {
	n := len(p)
	var err error
	if c.w != nil {
		n, err = c.w.Write(p)
	}
	c.n.Add(int64(n))
	return n, err
}

// hbSent is how a submit went: the status and page that came back (status 0 when the
// connection ended before a response could be read, err says how), and the body bytes the
// connection took before it was answered or closed.
type hbSent struct {
	status int
	page   string
	wrote  int64
	err    error
}

// hbPost sends f to link as a browser with jar's cookies would, with a Content-Length as
// browsers send, streaming the body (never holding it) over its own connection, and reading
// the response while the body is still being written: a server that answers early (403,
// 413) and closes is heard, not mistaken for a write error.
func hbPost(link string, jar http.CookieJar, f hbForm) hbSent {
	u, err := url.Parse(link)
	if err != nil {
		return hbSent{err: err}
	}
	var length hbCounter
	if err := f.write(&length); err != nil {
		return hbSent{err: err}
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return hbSent{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hardening-bench\r\n", u.RequestURI(), u.Host)
	fmt.Fprintf(&head, "Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n", hbBoundary, length.n.Load())
	if jar != nil {
		var cookies []string
		for _, c := range jar.Cookies(u) {
			cookies = append(cookies, c.Name+"="+c.Value)
		}
		if len(cookies) > 0 {
			fmt.Fprintf(&head, "Cookie: %s\r\n", strings.Join(cookies, "; "))
		}
	}
	head.WriteString("\r\n")
	body := &hbCounter{w: conn}
	wrote := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(conn, head.String()); err != nil {
			wrote <- err
			return
		}
		bw := bufio.NewWriterSize(body, 256<<10)
		err := f.write(bw)
		if err == nil {
			err = bw.Flush()
		}
		wrote <- err
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		_ = conn.Close() // stops the writer
		<-wrote
		return hbSent{wrote: body.n.Load(), err: err}
	}
	page, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	_ = conn.Close()
	<-wrote // its error is expected when the server answered before reading everything
	return hbSent{status: res.StatusCode, page: string(page), wrote: body.n.Load(), err: err}
}

// hbBrowser is a person's browser, with its own connections (closed by close).
type hbBrowser struct {
	*pagetest.Browser
	tr *http.Transport
}

func hbNewBrowser() *hbBrowser {
	b := &hbBrowser{Browser: pagetest.New(), tr: &http.Transport{}}
	b.Client.Transport = b.tr
	b.Client.Timeout = failsafe
	return b
}

func (b *hbBrowser) close() { b.tr.CloseIdleConnections() }

// hbAsker is a 2025-11-25 (push) client that declares URL elicitation: it accepts every URL
// elicitation at once (the person agreed to open the link) and hands the link to the
// benchmark on links. Its tool calls run in the background until close.
type hbAsker struct {
	cs         *mcp.ClientSession
	tr         *http.Transport
	links      chan string
	unexpected atomic.Int32 // form-mode elicitations: none should come
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// hbResult is the end of a tool call.
type hbResult struct {
	res *mcp.CallToolResult
	err error
}

func hbConnectAsker(b *testing.B, s *httpServer) *hbAsker {
	b.Helper()
	a := &hbAsker{tr: &http.Transport{}, links: make(chan string, 64)}
	client := mcp.NewClient(&mcp.Implementation{Name: "hardening-bench", Version: "1"}, &mcp.ClientOptions{
		Capabilities: urlCaps(true),
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				a.unexpected.Add(1)
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			a.links <- req.Params.URL
			return &mcp.ElicitResult{Action: "accept"}, nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: a.tr},
		DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(b, err)
	a.cs = cs
	a.ctx, a.cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	return a
}

// ask calls ask_user with form in the background; the call's end comes on the channel.
func (a *hbAsker) ask(message string, form map[string]any) <-chan hbResult {
	out := make(chan hbResult, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		res, err := a.cs.CallTool(a.ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"message": message, "form": form}})
		out <- hbResult{res, err}
	}()
	return out
}

// link waits for the next link the client was handed.
func (a *hbAsker) link(b *testing.B) string {
	b.Helper()
	select {
	case l := <-a.links:
		return l
	case <-time.After(failsafe):
		b.Fatal("no URL elicitation came")
		return ""
	}
}

// close ends the calls still waiting, and the session.
func (a *hbAsker) close() {
	a.cancel()
	a.wg.Wait()
	_ = a.cs.Close()
	a.tr.CloseIdleConnections()
}

const (
	hbFileBytes  = 10 << 20 // each file uploaded: the default --max-file-bytes
	hbFileFields = 20
)

// hbScanForm is a form of 20 file fields of up to 10 MiB each and one required secret
// text field of at least 3 characters. The text field is sensitive so that it is asked on
// the page with the files (a plain field would be asked in the client's form first), and a
// send with it too short fails there.
func hbScanForm() map[string]any {
	fields := []any{map[string]any{"name": "code", "type": "text", "label": "Reference code", "sensitive": true,
		"required": true, "min_length": 3}}
	for i := range hbFileFields {
		fields = append(fields, map[string]any{"name": fmt.Sprintf("scan%02d", i+1), "type": "file",
			"label": fmt.Sprintf("Scan %d", i+1), "max_bytes": hbFileBytes})
	}
	return map[string]any{"title": "Upload the scans", "fields": fields}
}

// hbScanSubmit is a send of the scan form with its first files fields given a file of 10 MiB
// each, and code as the text field, with csrf as the page's token.
func hbScanSubmit(csrf, code string, files int) hbForm {
	f := hbForm{inputs: [][2]string{{page.CSRFField, csrf}, {page.FieldName("code"), code}}, size: hbFileBytes}
	for i := range files {
		f.files = append(f.files, page.FieldName(fmt.Sprintf("scan%02d", i+1)))
	}
	return f
}

// hbOpen opens link in br, which must be shown the page, and returns its CSRF token.
func hbOpen(b *testing.B, br *hbBrowser, link string) string {
	b.Helper()
	status, html, err := br.Open(link)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, status, "the page opens: %s", html)
	csrf := pagetest.CSRF(html)
	require.NotEmpty(b, csrf, "the page has a CSRF token")
	return csrf
}

// BenchmarkPageUploadAttacks measures elicitd's peak resident memory (VmHWM) while its page
// is sent large uploads, at elicitd's defaults (10 MiB a file, 128 MiB of uploads held in
// all, a 256 MiB soft memory limit for the Go runtime), each part against a fresh elicitd so
// that each peak is its own:
//
//   - kept: four questions of 20 file fields each, each sent with its text field too short.
//     Question 1 is sent the 10 files of 10 MiB (100 MiB) that fit the budget: the send fails
//     (422) and its files are kept for a re-send, still held. Questions 2-4 are each sent 20
//     files of 10 MiB: past the budget, with question 1's files held, each is refused (413).
//   - refused: 8 sends at once of 20 x 10 MiB to a link another browser opened; each must be
//     refused (403) before its body is read, or its connection closed early.
//   - valid: one 10 MiB file sent validly; the tool call's result has it.
func BenchmarkPageUploadAttacks(b *testing.B) {
	var kept, refused, valid float64
	var n413, n422 int
	for range b.N {
		kept, n413, n422 = hbKeptUploads(b)
		refused = hbRefusedUploads(b)
		valid = hbValidUpload(b)
	}
	const under = 300e6 // bytes: the peak the two attacks must stay under
	b.Logf("upload attacks: peak RSS kept %.1f MiB (%.0f MB), refused %.1f MiB (%.0f MB), valid %.1f MiB; both attacks under 300 MB: %v",
		kept, kept*hbMiB/1e6, refused, refused*hbMiB/1e6, valid, kept*hbMiB < under && refused*hbMiB < under)
	b.ReportMetric(kept, "peak-RSS-MiB-kept")
	b.ReportMetric(float64(n422), "sends-422-kept")
	b.ReportMetric(float64(n413), "sends-413-budget")
	b.ReportMetric(refused, "peak-RSS-MiB-refused")
	b.ReportMetric(valid, "peak-RSS-MiB-valid")
}

var hbKeptMarker = regexp.MustCompile(`id="f-scan\d\d-kept"`)

// hbKeptUploads is part "kept": it returns the peak RSS in MiB and how many sends got 413
// and 422.
func hbKeptUploads(b *testing.B) (peak float64, n413, n422 int) {
	const (
		questions = 4
		fits      = 10 // files of question 1's send: 100 MiB, within the default 128 MiB budget
	)
	s := startHTTP(b)
	pid := s.cmd.Process.Pid
	a := hbConnectAsker(b, s)
	for i := range questions {
		a.ask(fmt.Sprintf("Question %d: upload the scans.", i+1), hbScanForm())
	}
	links := make([]string, questions)
	for i := range links {
		links[i] = a.link(b)
	}
	for i, link := range links {
		br := hbNewBrowser()
		csrf := hbOpen(b, br, link)
		files, want := hbFileFields, http.StatusRequestEntityTooLarge
		if i == 0 {
			files, want = fits, http.StatusUnprocessableEntity
		}
		sent := hbPost(link, br.Client.Jar, hbScanSubmit(csrf, "x", files))
		br.close()
		switch sent.status {
		case http.StatusUnprocessableEntity:
			n422++
			require.Contains(b, sent.page, `id="f-code-error">Reference code: must be at least 3 characters`, "question %d", i+1)
			require.Len(b, hbKeptMarker.FindAllString(sent.page, -1), files, "question %d: every file is kept for a re-send", i+1)
		case http.StatusRequestEntityTooLarge:
			n413++
			require.Contains(b, sent.page, "the server is holding as many uploads as it may", "question %d", i+1)
		default:
			b.Fatalf("question %d: the send got %d (%v), want 422 (files kept) or 413 (over the budget):\n%.2000s", i+1, sent.status, sent.err, sent.page)
		}
		b.Logf("kept: question %d: send of %d x 10 MiB got %d (want %d) after the server took %.1f MiB of the body; elicitd's RSS now %.1f MiB, peak %.1f MiB",
			i+1, files, sent.status, want, float64(sent.wrote)/hbMiB, hbRSSMiB(b, pid), hbPeakMiB(b, pid))
		require.Equal(b, want, sent.status, "question %d", i+1)
	}
	peak = hbPeakMiB(b, pid)
	require.Equal(b, 1, n422, "question 1's send fails validation and keeps its files")
	require.Equal(b, questions-1, n413, "the budget (128 MiB, 100 MiB of it held by question 1) refuses the 200 MiB sends")
	require.Zero(b, a.unexpected.Load(), "no field was asked in form mode")
	a.close()
	require.NoError(b, s.stop(b))
	return peak, n413, n422
}

// hbRefusedUploads is part "refused": it returns the peak RSS in MiB.
func hbRefusedUploads(b *testing.B) float64 {
	const attackers = 8
	s := startHTTP(b)
	pid := s.cmd.Process.Pid
	a := hbConnectAsker(b, s)
	a.ask("Upload the scans.", hbScanForm())
	link := a.link(b)
	owner := hbNewBrowser()
	defer owner.close()
	csrf := hbOpen(b, owner, link) // the owner's browser is bound to the link
	before := hbRSSMiB(b, pid)

	// Another browser, without the link's cookie, sends full bodies, even with the right
	// CSRF token.
	other := hbNewBrowser()
	defer other.close()
	sent := make([]hbSent, attackers)
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Go(func() { sent[i] = hbPost(link, other.Client.Jar, hbScanSubmit(csrf, "abcdef", hbFileFields)) })
	}
	wg.Wait()
	var n403, cut int
	var took int64
	for i, r := range sent {
		switch {
		case r.status == http.StatusForbidden:
			n403++
			require.Contains(b, r.page, "opened in another browser first", "attacker %d", i+1)
		case r.status == 0 && r.err != nil:
			cut++ // the connection closed before a response could be read
		default:
			b.Fatalf("attacker %d got %d (%v), want 403 or the connection closed:\n%.2000s", i+1, r.status, r.err, r.page)
		}
		took = max(took, r.wrote)
	}
	peak := hbPeakMiB(b, pid)
	b.Logf("refused: %d of %d sends got 403, %d had their connection closed; at most %.1f MiB of a 200 MiB body was taken (socket buffers); RSS %.1f MiB before, peak %.1f MiB",
		n403, attackers, cut, float64(took)/hbMiB, before, peak)
	// The owner's page is still there.
	status, _, err := owner.Open(link)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, status, "the owner can still open the page")
	require.Zero(b, a.unexpected.Load())
	a.close()
	require.NoError(b, s.stop(b))
	return peak
}

// hbValidUpload is part "valid": it returns the peak RSS in MiB.
func hbValidUpload(b *testing.B) float64 {
	s := startHTTP(b)
	pid := s.cmd.Process.Pid
	a := hbConnectAsker(b, s)
	defer a.close()
	form := map[string]any{"title": "The contract", "fields": []any{map[string]any{"name": "doc", "type": "file",
		"label": "Signed contract", "required": true, "max_bytes": hbFileBytes}}}
	done := a.ask("Attach the signed contract.", form)
	link := a.link(b)
	br := hbNewBrowser()
	defer br.close()
	csrf := hbOpen(b, br, link)
	f := hbForm{inputs: [][2]string{{page.CSRFField, csrf}}, files: []string{page.FieldName("doc")}, size: hbFileBytes}
	sent := hbPost(link, br.Client.Jar, f)
	require.Equal(b, http.StatusOK, sent.status, "the send is taken (%v):\n%.2000s", sent.err, sent.page)
	require.Contains(b, sent.page, "Your answer has been sent")

	var res hbResult
	select {
	case res = <-done:
	case <-time.After(failsafe):
		b.Fatal("the tool call did not return after the page was sent")
	}
	require.NoError(b, res.err)
	require.False(b, res.res.IsError, "%v", res.res.StructuredContent)
	raw, err := json.Marshal(res.res.StructuredContent)
	require.NoError(b, err)
	var out struct {
		Status string
		Data   map[string]struct {
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
			Base64 []byte `json:"base64"`
		}
	}
	require.NoError(b, json.Unmarshal(raw, &out))
	require.Equal(b, "completed", out.Status)
	doc, ok := out.Data["doc"]
	require.True(b, ok, "the result has the file: %.500s", raw)
	require.EqualValues(b, hbFileBytes, doc.Size)
	require.Len(b, doc.Base64, hbFileBytes, "the bytes are in the structured content")
	sum := sha256.New()
	require.NoError(b, hbWriteFile(sum, hbFileBytes, 0))
	require.Equal(b, hex.EncodeToString(sum.Sum(nil)), doc.SHA256, "the file that was sent")
	peak := hbPeakMiB(b, pid)
	a.close()
	require.NoError(b, s.stop(b))
	return peak
}

// hbMCPPost posts a JSON-RPC message to endpoint as a 2025-11-25 client, in session id
// when not "". The caller closes the body.
func hbMCPPost(hc *http.Client, endpoint, session, msg string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return hc.Do(req)
}

const (
	hbInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`
	hbInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// hbOpenSession opens a push-era session by hand (initialize, then initialized) and returns
// its id.
func hbOpenSession(hc *http.Client, endpoint string) (string, error) {
	res, err := hbMCPPost(hc, endpoint, "", hbInitialize)
	if err != nil {
		return "", err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return "", err
	}
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || id == "" || strings.Contains(string(body), `"error":`) {
		return "", fmt.Errorf("initialize got %d, session %q: %.300s", res.StatusCode, id, body)
	}
	res, err = hbMCPPost(hc, endpoint, id, hbInitialized)
	if err != nil {
		return "", err
	}
	body, _ = io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("notifications/initialized got %d: %.300s", res.StatusCode, body)
	}
	return id, nil
}

// hbGCTrace is a line of GODEBUG=gctrace=1: the heap at its start, at its end, live after,
// and the goal, in MB as the runtime writes them (MiB).
var hbGCTrace = regexp.MustCompile(`(?m)^gc (\d+) @([\d.]+)s .*?(\d+)->(\d+)->(\d+) MB, (\d+) MB goal.*$`)

// BenchmarkAbandonedSessions opens 20,000 push-era sessions by hand (initialize, then
// initialized, never DELETE) against an elicitd whose sessions end after 30 s idle, longer
// than opening them all takes, so all 20,000 are held at once (its session caps raised to
// 30,000 so that none is refused, and its memory limit to 1 GiB with them), and reports its resident memory at
// the start, with the sessions held, and once the idle ones have ended, with how long that
// took: it looks every 500 ms, for up to 3 minutes, for the RSS to come back within 50 MiB
// of the start. elicitd hands the memory of many ended sessions back to the system on its
// next look (every 10 s), so this should take some 10-20 s. The sessions must be gone (404).
// elicitd runs with GODEBUG=gctrace=1,scavtrace=1, so its log tells the live Go heap at each
// collection, and which collections were forced (debug.FreeOSMemory).
func BenchmarkAbandonedSessions(b *testing.B) {
	const (
		sessions = 20000
		workers  = 64
		idle     = 30 * time.Second
		within   = 50.0 // MiB
		giveUp   = 3 * time.Minute
	)
	for range b.N {
		s := startHTTP(b, "ELICITD_SESSION_IDLE=30s", "ELICITD_MAX_SESSIONS=30000", "ELICITD_MAX_SESSIONS_PER_CALLER=30000", "ELICITD_MEMORY_LIMIT=1073741824",
			"ELICITD_LOG_LEVEL=info", "GODEBUG=gctrace=1,scavtrace=1")
		pid := s.cmd.Process.Pid
		launched := time.Now() // about when elicitd's clock (gctrace's @) started
		time.Sleep(time.Second)
		start := hbRSSMiB(b, pid)

		tr := &http.Transport{MaxIdleConnsPerHost: 2 * workers, MaxIdleConns: 4 * workers}
		hc := &http.Client{Transport: tr, Timeout: failsafe}
		ids := make([]string, sessions)
		var next atomic.Int64
		var g errgroup.Group
		began := time.Now()
		for range workers {
			g.Go(func() error {
				for {
					i := next.Add(1) - 1
					if i >= sessions {
						return nil
					}
					id, err := hbOpenSession(hc, s.url)
					if err != nil {
						return fmt.Errorf("session %d: %w", i, err)
					}
					ids[i] = id
				}
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		created := time.Now()
		creating := created.Sub(began)
		held := hbRSSMiB(b, pid)
		peak := hbPeakMiB(b, pid)
		b.Logf("abandoned: %d sessions opened in %.1f s (%.0f/s); RSS %.1f MiB at the start, %.1f MiB after, peak %.1f MiB",
			sessions, creating.Seconds(), sessions/creating.Seconds(), start, held, peak)

		final, returned := held, false
		var trail []string // the RSS every 5 s while waiting
		for time.Since(created) < giveUp {
			time.Sleep(500 * time.Millisecond)
			final = hbRSSMiB(b, pid)
			if final <= start+within {
				returned = true
				break
			}
			if at := time.Since(created); at >= time.Duration(len(trail)+1)*5*time.Second {
				trail = append(trail, fmt.Sprintf("%.0fs:%.0f", at.Seconds(), final))
			}
		}
		waited := time.Since(created)

		// Every session has been idle long enough: each is gone.
		if d := time.Until(created.Add(idle + 2*time.Second)); d > 0 {
			time.Sleep(d)
		}
		for _, id := range []string{ids[0], ids[sessions/2], ids[sessions-1]} {
			res, err := hbMCPPost(hc, s.url, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			require.NoError(b, err)
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.Equal(b, http.StatusNotFound, res.StatusCode, "abandoned session %s was reclaimed: %s", id, body)
		}
		tr.CloseIdleConnections()

		// The Go heap, from gctrace.
		logs := s.stderr.String()
		var gcs int
		var maxLive, lastLive, lastGoal, lastAt float64
		var forcedAt []string // collections forced by debug.FreeOSMemory: s after the last session was opened
		since := created.Sub(launched).Seconds()
		for _, m := range hbGCTrace.FindAllStringSubmatch(logs, -1) {
			gcs++
			live, _ := strconv.ParseFloat(m[5], 64)
			goal, _ := strconv.ParseFloat(m[6], 64)
			at, _ := strconv.ParseFloat(m[2], 64)
			maxLive = max(maxLive, live)
			lastLive, lastGoal, lastAt = live, goal, at
			if strings.HasSuffix(strings.TrimSpace(m[0]), "(forced)") {
				forcedAt = append(forcedAt, fmt.Sprintf("%.1fs (%s->%s MB live)", at-since, m[3], m[5]))
			}
		}
		require.NotContains(b, logs, "HTTP session refused", "no session was refused by a cap")
		b.Logf("abandoned: RSS (s after the last session was opened: MiB) %s; at the end %.1f MiB after %.0f s, start %.1f MiB: returned within %.0f MiB: %v",
			strings.Join(trail, " "), final, waited.Seconds(), start, within, returned)
		b.Logf("abandoned: gctrace: %d collections (%d periodic, forced by FreeOSMemory at %s); live heap at most %.0f MiB; the last, %.0f s after the last session was opened: %.0f MiB live (goal %.0f MiB)",
			gcs, strings.Count(logs, "GC forced"), strings.Join(forcedAt, ", "), maxLive, lastAt-since, lastLive, lastGoal)

		b.ReportMetric(start, "RSS-MiB-start")
		b.ReportMetric(held, "RSS-MiB-sessions-held")
		b.ReportMetric(peak, "peak-RSS-MiB")
		b.ReportMetric(final, "RSS-MiB-final")
		b.ReportMetric(waited.Seconds(), "s-waited")
		b.ReportMetric(map[bool]float64{true: 1, false: 0}[returned], "returned-within-50MiB")
		b.ReportMetric(creating.Seconds(), "s-to-open-20000")
		b.ReportMetric(maxLive, "max-live-heap-MiB")
		b.ReportMetric(lastLive, "last-live-heap-MiB")
		b.ReportMetric(float64(len(forcedAt)), "FreeOSMemory-GCs")
		require.NoError(b, s.stop(b))
	}
}

// hbRaiseNofile raises this process's soft limit of open files to need (within the hard
// limit), so that elicitd, started later, inherits it too.
func hbRaiseNofile(b *testing.B, need uint64) {
	b.Helper()
	var lim syscall.Rlimit
	require.NoError(b, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Max < need {
		b.Skipf("the hard limit of open files is %d; %d are needed", lim.Max, need)
	}
	// Set even when high enough: a limit set here is the one a child inherits (Go otherwise
	// gives a child the soft limit it found at its own start).
	lim.Cur = max(lim.Cur, need)
	require.NoError(b, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
}

// hbIdleConn is one connection of BenchmarkIdleConnections.
type hbIdleConn struct {
	refusedAt, closedAt time.Time
	status              int
	connClose           bool // the 401 said Connection: close
	closed              bool
	err                 error
}

// BenchmarkIdleConnections opens 3,000 connections to an elicitd with a bearer token and a
// 2 s idle limit for connections; each sends one request without the token, reads its 401,
// and stays open, idle. It reports how many the server closed, how long after the last 401
// the last was closed, and elicitd's open descriptors at the peak and after.
func BenchmarkIdleConnections(b *testing.B) {
	const (
		conns    = 3000
		dialers  = 64
		deadline = 60 * time.Second
	)
	hbRaiseNofile(b, conns+1024)
	token := "hb-idle-" + strings.Repeat("0123456789abcdef", 2)[:24]
	require.Len(b, token, 32)
	for range b.N {
		s := startHTTP(b, "ELICITD_HTTP_TOKEN="+token, "ELICITD_CONN_IDLE=2s")
		pid := s.cmd.Process.Pid
		u, err := url.Parse(s.url)
		require.NoError(b, err)
		before := hbOpenFDs(pid)

		// Sample elicitd's descriptors throughout.
		var peakFDs atomic.Int64
		stopSampling := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(25 * time.Millisecond)
			defer t.Stop()
			for {
				if n := int64(hbOpenFDs(pid)); n > peakFDs.Load() {
					peakFDs.Store(n)
				}
				select {
				case <-stopSampling:
					return
				case <-t.C:
				}
			}
		}()

		request := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\n\r\n{}", u.Host)
		results := make([]hbIdleConn, conns)
		began := time.Now()
		until := began.Add(deadline)
		dialing := make(chan struct{}, dialers)
		var wg sync.WaitGroup
		for i := range conns {
			wg.Go(func() {
				r := &results[i]
				dialing <- struct{}{}
				c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
				if err != nil {
					<-dialing
					r.err = err
					return
				}
				defer c.Close()
				_ = c.SetDeadline(until)
				br := bufio.NewReader(c)
				_, err = io.WriteString(c, request)
				var res *http.Response
				if err == nil {
					res, err = http.ReadResponse(br, nil)
				}
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					r.status, r.connClose = res.StatusCode, res.Close
				}
				r.refusedAt = time.Now()
				<-dialing
				if err != nil {
					r.err = err
					return
				}
				// Idle, until the server closes the connection.
				var one [1]byte
				_, err = br.Read(one[:])
				r.closedAt = time.Now()
				var ne net.Error
				r.closed = err != nil && !(errors.As(err, &ne) && ne.Timeout())
				if !r.closed {
					r.err = fmt.Errorf("still open: read %v", err)
				}
			})
		}
		wg.Wait()
		time.Sleep(300 * time.Millisecond)
		close(stopSampling)
		<-sampled
		after := hbOpenFDs(pid)

		var closed, unauthorized, connClose int
		var lastRefused, lastClosed time.Time
		var longest, shortest time.Duration
		var firstErr error
		for _, r := range results {
			if r.status == http.StatusUnauthorized {
				unauthorized++
			}
			if r.connClose {
				connClose++
			}
			if r.refusedAt.After(lastRefused) {
				lastRefused = r.refusedAt
			}
			if r.err != nil && firstErr == nil {
				firstErr = r.err
			}
			if !r.closed {
				continue
			}
			closed++
			if r.closedAt.After(lastClosed) {
				lastClosed = r.closedAt
			}
			held := r.closedAt.Sub(r.refusedAt)
			longest = max(longest, held)
			if shortest == 0 || held < shortest {
				shortest = held
			}
		}
		b.Logf("idle: %d of %d got 401 (%d with Connection: close), %d closed by the server; each was held idle %.2f s to %.2f s; descriptors %d before, %d at the peak, %d after; first error: %v",
			unauthorized, conns, connClose, closed, shortest.Seconds(), longest.Seconds(), before, peakFDs.Load(), after, firstErr)
		require.Equal(b, conns, unauthorized, "every request without the token gets 401 (first error: %v)", firstErr)
		b.ReportMetric(float64(closed), "conns-closed-of-3000")
		b.ReportMetric(lastClosed.Sub(lastRefused).Seconds(), "s-last-401-to-last-close")
		b.ReportMetric(longest.Seconds(), "s-longest-idle")
		b.ReportMetric(float64(peakFDs.Load()), "fds-peak")
		b.ReportMetric(float64(after), "fds-after")
		require.NoError(b, s.stop(b))
	}
}
