package page

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"

	"github.com/elicitd/elicitd/validator"
)

// Upload memory. Every byte of a submit that the page holds (the values and files being read,
// and the secrets and files kept for a re-send after an invalid one) is taken from one budget
// shared by every link of a Server, Options.MaxHeldBytes; a submit that would go over it is
// refused (413) and what it had read is let go. The body is streamed part by part, never
// parsed whole into memory or spilled to disk, and what a file field reads beyond its own
// limit is counted and dropped, not held.
//
// Kept files stay in memory, counted against the budget, rather than in a temporary
// directory: they are a person's documents, and memory is gone with the process, where a
// file on disk would outlive a crash.

// DefaultMaxHeldBytes is Options.MaxHeldBytes' default: 128 MiB.
const DefaultMaxHeldBytes = 128 << 20

// maxValueBytes bounds the plain values of one submit together (all but its files).
const maxValueBytes = 1 << 20

// errBudget is a submit's error when the Server holds as much as it may.
var errBudget = errors.New("page: the upload budget is spent")

// received is one submit as read: its plain values, and the first file of each file field.
type received struct {
	values url.Values
	files  map[string]*validator.Upload // by field name
	errs   []validator.FieldError       // files over their field's limit
	held   int64                        // bytes taken from the budget
}

// take takes n bytes from the Server's budget for rc.
func (s *Server) take(rc *received, n int64) error {
	if !s.budget.TryAcquire(n) {
		return errBudget
	}
	rc.held += n
	s.held.Add(n)
	return nil
}

// release gives n bytes back to the budget.
func (s *Server) release(n int64) {
	if n > 0 {
		s.held.Add(-n)
		s.budget.Release(n)
	}
}

// chunk is one read of a part, from chunks.
type chunk = [32 << 10]byte

// chunks recycles the buffers parts are read into: a part is held in chunks while it is read
// (its size is not known before), then copied once into a slice of its exact size, and the
// chunks go back here, so reading leaves no garbage behind but that one slice's worth.
var chunks = sync.Pool{New: func() any { return new(chunk) }}

// readPart reads p whole for rc, holding at most max bytes, taken from the budget as they
// come: its bytes, or nil and its size when it is larger than max (what it had taken is
// given back).
func (s *Server) readPart(rc *received, p io.Reader, max int64) ([]byte, int64, error) {
	var held []*chunk
	var last int // bytes in the last chunk
	defer func() {
		for _, c := range held {
			chunks.Put(c)
		}
	}()
	var size, taken int64
	scratch := chunks.Get().(*chunk)
	defer chunks.Put(scratch)
	for {
		c := scratch
		if size < max {
			c = chunks.Get().(*chunk)
		}
		n, err := io.ReadFull(p, c[:])
		size += int64(n)
		switch {
		case c == scratch:
		case n == 0 || size > max:
			chunks.Put(c)
		default:
			if terr := s.take(rc, int64(n)); terr != nil {
				chunks.Put(c)
				return nil, size, terr
			}
			taken += int64(n)
			held, last = append(held, c), n
		}
		if size > max && taken > 0 {
			// Over the limit: what was held goes back; the rest is only counted.
			rc.held -= taken
			s.release(taken)
			taken = 0
			for _, c := range held {
				chunks.Put(c)
			}
			held = nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, size, err
		}
	}
	if size > max {
		return nil, size, nil
	}
	out := make([]byte, 0, size)
	for i, c := range held {
		n := len(c)
		if i == len(held)-1 {
			n = last
		}
		out = append(out, c[:n]...)
	}
	return out, size, nil
}

// receive reads r's body into rc: a multipart submit streamed part by part, a urlencoded
// one (a page without files) parsed. On an error, rc holds what was read so far.
func (l *Link) receive(r *http.Request, rc *received) error {
	s := l.s
	rc.values, rc.files = url.Values{}, map[string]*validator.Upload{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		b, _, err := s.readPart(rc, r.Body, maxValueBytes)
		if err != nil {
			return err
		}
		if b == nil {
			return &http.MaxBytesError{Limit: maxValueBytes}
		}
		rc.values, err = url.ParseQuery(string(b))
		return err
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return err
	}
	var values int64
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := p.FormName()
		f, isFile := l.fileField(name)
		if !isFile {
			b, size, err := s.readPart(rc, p, maxValueBytes-values)
			if err != nil {
				return err
			}
			if values += size; b == nil {
				return &http.MaxBytesError{Limit: maxValueBytes}
			}
			rc.values.Add(name, string(b))
			continue
		}
		if _, seen := rc.files[f.Name]; seen || p.FileName() == "" || rc.over(f.Name) {
			// A second file for one field, or none chosen: nothing to keep.
			if _, err := io.Copy(io.Discard, p); err != nil {
				return err
			}
			continue
		}
		limit := min(f.MaxBytes, s.o.MaxFileBytes)
		b, size, err := s.readPart(rc, p, limit)
		if err != nil {
			return err
		}
		if b == nil {
			label := labelOf(f)
			rc.errs = append(rc.errs, validator.FieldError{Field: f.Name, Label: label, Constraint: "max_bytes",
				Message: fmt.Sprintf("%s: is %d bytes; the limit is %d", label, size, limit)})
			continue
		}
		rc.files[f.Name] = &validator.Upload{Name: p.FileName(), Bytes: b}
	}
}

// over reports whether rc has found field's file over its limit.
func (rc *received) over(field string) bool {
	for _, fe := range rc.errs {
		if fe.Field == field {
			return true
		}
	}
	return false
}

// fileField returns the asked file field whose form name is name.
func (l *Link) fileField(name string) (validator.Field, bool) {
	for _, f := range l.fields {
		if f.Type == validator.File && FieldName(f.Name) == name {
			return f, true
		}
	}
	return validator.Field{}, false
}

// heldBy is how many bytes content's secrets and files hold.
func heldBy(content map[string]any) int64 {
	var n int64
	for _, v := range content {
		switch v := v.(type) {
		case *validator.Upload:
			n += int64(len(v.Bytes))
		case string:
			n += int64(len(v))
		}
	}
	return n
}
