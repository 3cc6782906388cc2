// Package memory is the in-process store.Store: question records and page uploads in this
// process's memory, as elicitd kept them before the store existed. Nothing survives the
// process, and no other node sees them; it is the store for stdio, and for tests.
//
// Records are kept JSON-encoded, exactly as the NATS store keeps them, so a record read
// back never shares memory with the one written and a record that would not fit there does
// not fit here either. Revisions come from one counter, as a stream's sequence does.
//
// Expiry runs on the injected clock (clock.NewMock in tests). Records sit in a min-heap by
// deadline, and every call first removes the records whose deadline has come: a record is
// gone exactly at its deadline, and expired records never accumulate, whether or not
// anyone reads them. Files expire Limits.FilesTTL after they were put, the same way.
package memory

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/elicitd/elicitd/store"
)

// Options configure a Store.
type Options struct {
	// Clock is what deadlines are measured on; the real clock if nil.
	Clock clock.Clock
	// Limits bound the store; zero fields take store's defaults.
	store.Limits
}

// Store is the in-memory store.Store.
type Store struct {
	clock clock.Clock
	lim   store.Limits

	mu        sync.Mutex
	closed    bool
	seq       uint64                       // the last revision given
	recs      map[string]*entry            // by key
	owners    map[string]map[string]*entry // by owner digest, then key
	expiry    expiryHeap                   // every entry of recs, soonest deadline first
	bytes     int64                        // keys and values of recs
	files     map[string]map[string]*file  // by question id, then name
	fileQueue []fileRef                    // every file put, oldest first (some since replaced or deleted)
	fileBytes int64
	nfiles    int // files held
	shared    map[string][]byte
}

type entry struct {
	key, owner string // owner: its digest
	val        []byte
	rev        uint64
	deadline   time.Time
	idx        int // in expiry
}

type file struct {
	data []byte
	put  time.Time
}

type fileRef struct {
	qid, name string
	f         *file
}

var _ store.Store = (*Store)(nil)

// New returns an empty Store.
func New(o Options) *Store {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	return &Store{clock: o.Clock, lim: o.Limits.WithDefaults(), recs: map[string]*entry{},
		owners: map[string]map[string]*entry{}, files: map[string]map[string]*file{}}
}

// Len returns the number of records the store holds, expired ones removed first.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(s.clock.Now())
	return len(s.recs)
}

// Bytes returns the bytes held by records and by files, expired ones removed first.
func (s *Store) Bytes() (records, files int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	s.sweep(now)
	s.sweepFiles(now)
	return s.bytes, s.fileBytes
}

// lock takes s.mu and removes what has expired, unless s is closed.
func (s *Store) lock() (time.Time, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return time.Time{}, fmt.Errorf("%w: the memory store is closed", store.ErrUnavailable)
	}
	now := s.clock.Now()
	s.sweep(now)
	return now, nil
}

// sweep removes every record whose deadline is not after now.
func (s *Store) sweep(now time.Time) {
	for len(s.expiry) > 0 && !s.expiry[0].deadline.After(now) {
		s.remove(s.expiry[0])
	}
}

func (s *Store) remove(e *entry) {
	heap.Remove(&s.expiry, e.idx)
	delete(s.recs, e.key)
	if m := s.owners[e.owner]; m != nil {
		delete(m, e.key)
		if len(m) == 0 {
			delete(s.owners, e.owner)
		}
	}
	s.bytes -= int64(len(e.key) + len(e.val))
}

func (s *Store) Create(ctx context.Context, r store.Record) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	val, err := store.Encode(r, now, s.lim.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	key := store.Key(r.Owner, r.ID)
	if s.recs[key] != nil {
		return 0, fmt.Errorf("%w: %s", store.ErrExists, r.ID)
	}
	size := int64(len(key) + len(val))
	if s.bytes+size > s.lim.MaxBytes {
		return 0, fmt.Errorf("%w: records hold %d bytes of %d; %s needs %d", store.ErrFull, s.bytes, s.lim.MaxBytes, r.ID, size)
	}
	s.seq++
	e := &entry{key: key, owner: store.OwnerDigest(r.Owner), val: val, rev: s.seq, deadline: r.Deadline}
	s.recs[key] = e
	m := s.owners[e.owner]
	if m == nil {
		m = map[string]*entry{}
		s.owners[e.owner] = m
	}
	m[key] = e
	heap.Push(&s.expiry, e)
	s.bytes += size
	return e.rev, nil
}

func (s *Store) Get(ctx context.Context, owner, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	if _, err := s.lock(); err != nil {
		return store.Record{}, err
	}
	e := s.recs[store.Key(owner, id)]
	var val []byte
	var rev uint64
	if e != nil {
		val, rev = e.val, e.rev // never changed in place: an update replaces val
	}
	s.mu.Unlock()
	if e == nil {
		return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	return store.Decode(val, rev)
}

func (s *Store) Update(ctx context.Context, r store.Record) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if r.Revision == 0 {
		return 0, fmt.Errorf("%w: update of %s without a revision", store.ErrInvalid, r.ID)
	}
	now, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	val, err := store.Encode(r, now, s.lim.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	e := s.recs[store.Key(r.Owner, r.ID)]
	switch {
	case e == nil:
		return 0, fmt.Errorf("%w: %s", store.ErrNotFound, r.ID)
	case e.rev != r.Revision:
		return 0, fmt.Errorf("%w: %s is at revision %d, not %d", store.ErrConflict, r.ID, e.rev, r.Revision)
	}
	grow := int64(len(val) - len(e.val))
	if grow > 0 && s.bytes+grow > s.lim.MaxBytes {
		return 0, fmt.Errorf("%w: records hold %d bytes of %d; %s grows by %d", store.ErrFull, s.bytes, s.lim.MaxBytes, r.ID, grow)
	}
	s.seq++
	e.val, e.rev = val, s.seq
	s.bytes += grow
	if !e.deadline.Equal(r.Deadline) {
		e.deadline = r.Deadline
		heap.Fix(&s.expiry, e.idx)
	}
	return e.rev, nil
}

func (s *Store) Delete(ctx context.Context, owner, id string, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rev == 0 {
		return fmt.Errorf("%w: delete of %s without a revision", store.ErrInvalid, id)
	}
	if _, err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e := s.recs[store.Key(owner, id)]
	switch {
	case e == nil:
		return fmt.Errorf("%w: %s", store.ErrNotFound, id)
	case e.rev != rev:
		return fmt.Errorf("%w: %s is at revision %d, not %d", store.ErrConflict, id, e.rev, rev)
	}
	s.remove(e)
	return nil
}

func (s *Store) List(ctx context.Context, owner string) ([]store.Record, error) {
	return s.list(ctx, &owner)
}

var _ store.Scanner = (*Store)(nil)

// All returns every live record, of every owner.
func (s *Store) All(ctx context.Context) ([]store.Record, error) { return s.list(ctx, nil) }

// list returns owner's records; with owner nil, everyone's.
func (s *Store) list(ctx context.Context, owner *string) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	type held struct {
		val []byte
		rev uint64
	}
	var vals []held
	add := func(m map[string]*entry) {
		for _, e := range m {
			vals = append(vals, held{e.val, e.rev})
		}
	}
	if owner != nil {
		add(s.owners[store.OwnerDigest(*owner)])
	} else {
		for _, m := range s.owners {
			add(m)
		}
	}
	s.mu.Unlock()
	out := make([]store.Record, 0, len(vals))
	for _, v := range vals {
		r, err := store.Decode(v.val, v.rev)
		if err != nil {
			return nil, err
		}
		if owner == nil || r.Owner == *owner { // a digest collision is not a way into another's records
			out = append(out, r)
		}
	}
	store.SortRecords(out)
	return out, nil
}

func (s *Store) PutFile(ctx context.Context, questionID, name string, r io.Reader) error {
	if err := store.CheckFile(questionID, name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Read outside the lock: r may be a slow client's upload.
	data, err := io.ReadAll(store.LimitReader(r, s.lim.MaxFileBytes))
	if err != nil {
		if err == store.ErrTooLarge {
			return fmt.Errorf("%w: file %q of %s is over the limit of %d bytes", store.ErrTooLarge, name, questionID, s.lim.MaxFileBytes)
		}
		return err
	}
	now, err := s.lock()
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.sweepFiles(now)
	var old int64
	if f := s.files[questionID][name]; f != nil {
		old = int64(len(f.data))
	}
	if s.fileBytes-old+int64(len(data)) > s.lim.MaxFilesBytes {
		return fmt.Errorf("%w: files hold %d bytes of %d; %q of %s needs %d", store.ErrFull, s.fileBytes, s.lim.MaxFilesBytes, name, questionID, len(data))
	}
	m := s.files[questionID]
	if m == nil {
		m = map[string]*file{}
		s.files[questionID] = m
	}
	if m[name] == nil {
		s.nfiles++
	}
	f := &file{data: data, put: now}
	m[name] = f
	s.fileQueue = append(s.fileQueue, fileRef{questionID, name, f})
	s.fileBytes += int64(len(data)) - old
	s.compactFiles()
	return nil
}

// sweepFiles removes the files put FilesTTL ago or earlier, and forgets the queue's
// references to files already replaced or deleted.
func (s *Store) sweepFiles(now time.Time) {
	i := 0
	for ; i < len(s.fileQueue); i++ {
		ref := s.fileQueue[i]
		cur := s.files[ref.qid][ref.name]
		if cur != ref.f {
			continue // replaced or deleted
		}
		if now.Before(ref.f.put.Add(s.lim.FilesTTL)) {
			break
		}
		s.dropFile(ref.qid, ref.name)
	}
	s.fileQueue = s.fileQueue[i:]
	if len(s.fileQueue) == 0 {
		s.fileQueue = nil // let the backing array go
	}
}

// compactFiles drops the queue's references to files since replaced or deleted, once they
// are most of it, so that replacing one file over and over does not grow the queue.
func (s *Store) compactFiles() {
	if len(s.fileQueue) < 64 || len(s.fileQueue) < 2*s.nfiles {
		return
	}
	q := s.fileQueue[:0]
	for _, ref := range s.fileQueue {
		if s.files[ref.qid][ref.name] == ref.f {
			q = append(q, ref)
		}
	}
	clear(s.fileQueue[len(q):])
	s.fileQueue = q
}

func (s *Store) dropFile(qid, name string) {
	m := s.files[qid]
	f := m[name]
	if f == nil {
		return
	}
	s.fileBytes -= int64(len(f.data))
	s.nfiles--
	delete(m, name)
	if len(m) == 0 {
		delete(s.files, qid)
	}
}

func (s *Store) GetFile(ctx context.Context, questionID, name string) (io.ReadCloser, error) {
	if err := store.CheckFile(questionID, name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now, err := s.lock()
	if err != nil {
		return nil, err
	}
	s.sweepFiles(now)
	f := s.files[questionID][name]
	s.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("%w: file %q of %s", store.ErrNotFound, name, questionID)
	}
	return io.NopCloser(bytes.NewReader(f.data)), nil
}

func (s *Store) DeleteFiles(ctx context.Context, questionID string) error {
	if !store.ValidID(questionID) {
		return fmt.Errorf("%w: question id %q", store.ErrInvalid, questionID)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for name := range s.files[questionID] {
		s.dropFile(questionID, name)
	}
	return nil
}

// Close drops everything the store holds.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.recs, s.owners, s.expiry, s.files, s.fileQueue = nil, nil, nil, nil, nil
	s.bytes, s.fileBytes, s.nfiles = 0, 0, 0
	return nil
}

// expiryHeap is a min-heap of entries by deadline; each entry knows its index.
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
