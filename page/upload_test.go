package page_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/validator"
)

// countingListener counts the bytes the server reads from its connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// fileFields are n file fields of up to max bytes each, and a required text field.
func fileFields(n int, max int64) []validator.Field {
	fields := []validator.Field{{Name: "note", Type: validator.Text, Label: "Note", Required: true, MinLength: validator.Ptr(3)}}
	for i := range n {
		fields = append(fields, validator.Field{Name: fmt.Sprintf("doc%d", i), Type: validator.File, Label: fmt.Sprintf("Document %d", i), MaxBytes: max})
	}
	return fields
}

// files are n files of size bytes, named for fileFields.
func files(n, size int) map[string][]byte {
	out := map[string][]byte{}
	for i := range n {
		b := bytes.Repeat([]byte{byte('a' + i)}, size)
		out[fmt.Sprintf("doc%d", i)] = b
	}
	return out
}

// A browser that may not use the page (no binding cookie, or an ended link) is refused
// before its body is read: a 20 MiB multipart body costs the server a few KB at most.
func TestARefusedSubmitIsNotRead(t *testing.T) {
	f := newFixtureWith(t, page.Options{}, fileFields(2, 10<<20)...)
	owner := browser(t)
	_, body := get(t, owner, f.link.URL)
	csrf := csrfOf(t, body)

	stranger := browser(t)
	before := f.read.Load()
	status, _, err := stranger.Post(f.link.URL, map[string]string{page.CSRFField: csrf},
		map[string][]byte{page.FieldName("doc0"): make([]byte, 10<<20), page.FieldName("doc1"): make([]byte, 10<<20)})
	if err == nil { // the server may close the connection before the client has sent it all
		assert.Equal(t, http.StatusForbidden, status)
	}
	read := f.read.Load() - before
	assert.Less(t, read, int64(64<<10), "the refused body was not read: %d bytes", read)
	assert.Zero(t, f.ps.Held())
	assert.Empty(t, f.answers())

	f.link.Close()
	before = f.read.Load()
	_, _, _ = owner.Post(f.link.URL, map[string]string{page.CSRFField: csrf}, map[string][]byte{page.FieldName("doc0"): make([]byte, 10<<20)})
	read = f.read.Load() - before
	assert.Less(t, read, int64(64<<10), "a closed link's body was not read: %d bytes", read)
}

// Files kept across an invalid send are counted against the Server's budget; a send that
// would pass it is refused with 413 and a page naming the limit, and the budget comes back
// when the link that held it closes.
func TestUploadsAreBoundedByOneBudget(t *testing.T) {
	const budget = 1 << 20
	f := newFixtureWith(t, page.Options{MaxHeldBytes: budget}, fileFields(3, 512<<10)...)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	// Two files kept: the note is too short, so the send fails and keeps them.
	status, body := post(t, a, f.link.URL, map[string]string{page.CSRFField: csrfOf(t, body), page.FieldName("note"): "x"}, files(2, 400<<10))
	require.Equal(t, http.StatusUnprocessableEntity, status)
	assert.Contains(t, body, "Kept from your last try")
	assert.Equal(t, int64(800<<10), f.ps.Held(), "what the link keeps is held, and nothing else")

	// A second question's send of 400 KiB does not fit.
	form, err := validator.Compile(validator.Form{Fields: fileFields(3, 512<<10)})
	require.NoError(t, err)
	other, err := f.ps.Open(page.Question{Form: form, Message: "m", Submit: func(*page.Link, map[string]any) error { return nil }})
	require.NoError(t, err)
	defer other.Close()
	b := browser(t)
	_, obody := get(t, b, other.URL)
	status, obody = post(t, b, other.URL, map[string]string{page.CSRFField: csrfOf(t, obody), page.FieldName("note"): "fine"}, files(1, 400<<10))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, obody, "1 MiB for all pages at once", "the page names the limit")
	assert.Equal(t, int64(800<<10), f.ps.Held(), "the refused send let go of what it read")

	// The first link completes with its kept files; the budget is free again.
	status, _ = post(t, a, f.link.URL, map[string]string{page.CSRFField: csrfOf(t, body), page.FieldName("note"): "done"}, nil)
	require.Equal(t, http.StatusOK, status)
	got := f.answers()
	require.Len(t, got, 1)
	assert.Len(t, got[0]["doc0"].(*validator.Upload).Bytes, 400<<10, "the kept file was handed over")
	assert.Zero(t, f.ps.Held())

	status, _ = post(t, b, other.URL, map[string]string{page.CSRFField: csrfOf(t, obody), page.FieldName("note"): "fine"}, files(1, 400<<10))
	assert.Equal(t, http.StatusOK, status, "now it fits")
	assert.Zero(t, f.ps.Held())
}

// Closing a link lets go of what it kept.
func TestClosingALinkFreesWhatItKept(t *testing.T) {
	f := newFixtureWith(t, page.Options{}, fileFields(1, 1<<20)...)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	status, _ := post(t, a, f.link.URL, map[string]string{page.CSRFField: csrfOf(t, body), page.FieldName("note"): "x"}, files(1, 300<<10))
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, int64(300<<10), f.ps.Held())
	f.link.Close()
	assert.Zero(t, f.ps.Held())
}

// The page's body is streamed: a second file for one field is not kept, a file over its
// field's limit is named with its size, and a body without multipart (a page without files
// sent urlencoded) is read too.
func TestBodiesAsBrowsersSendThem(t *testing.T) {
	f := newFixtureWith(t, page.Options{}, fileFields(1, 1024)...)
	a := browser(t)
	_, body := get(t, a, f.link.URL)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField(page.CSRFField, csrfOf(t, body))
	_ = mw.WriteField(page.FieldName("note"), "two files")
	for _, size := range []int{10, 2000} {
		fw, _ := mw.CreateFormFile(page.FieldName("doc0"), "a.txt")
		_, _ = fw.Write(bytes.Repeat([]byte("z"), size))
	}
	require.NoError(t, mw.Close())
	res, err := a.Client.Post(f.link.URL, mw.FormDataContentType(), &buf)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	got := f.answers()
	require.Len(t, got, 1)
	assert.Len(t, got[0]["doc0"].(*validator.Upload).Bytes, 10, "the first file of the field")
	assert.Zero(t, f.ps.Held())
}
