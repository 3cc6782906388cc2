// Package natsstore is the store.Store on NATS JetStream: question records in a key-value
// bucket, page uploads in an object store, on an embedded nats-server (Embedded: one
// process, its files in a data directory) or an external NATS cluster (Connect: several
// nodes sharing questions, R3 buckets).
//
// # How records are written
//
//   - The bucket keeps one revision per key (History 1) on file storage, each value at most
//     Limits.MaxRecordBytes, all of them at most Limits.MaxBytes: a full bucket refuses new
//     records (discard new), it never evicts one.
//   - Create is kv.Create (it fails on a live key) with a per-key TTL: the time left until
//     the record's Deadline, rounded up to whole seconds (JetStream's TTL unit), so a
//     record never expires before its Deadline and at most about a second after it.
//   - Update is NOT kv.Update: that writes no TTL, and a record updated that way would
//     never expire (nats-server issue 6959). It publishes the record to the key's subject
//     with Nats-Expected-Last-Subject-Sequence set to the caller's revision (the
//     compare-and-set) and a message TTL computed from the Deadline again. A "wrong last
//     sequence" answer (API error 10071) is a conflict. On a replicated bucket JetStream
//     also answers 10164 while another write to the key is in process on the stream
//     leader, even one it has just acknowledged: the write is tried again for about half a
//     second (whileInProcess), then ErrUnavailable (that other write may never land: a
//     quorum lost). Create and Delete do the same.
//   - Delete purges the key, compare-and-set on its revision, leaving a purge marker that
//     itself expires after Options.MarkerTTL.
//   - List reads one owner's keys by subject filter (q.<owner digest>.*) from the stream
//     leader: which keys hold a message (the stream's info), then each key's last message
//     (JetStream's message get API, one request per key). It lists every record whose
//     write was acknowledged, through any server. All reads every key that way.
//   - There is no watch per question: nothing here watches at all.
//
// Reads (Get, and the checks after a failed compare-and-set) may be served by a follower
// and be slightly stale; only the compare-and-set writes decide races.
//
// Get and List also hide a record whose Deadline has passed on Options.Clock (normally
// the real clock, since JetStream's TTLs run on real time) during the second or so before
// JetStream removes it. An Update in that second still succeeds, where the memory store
// says ErrNotFound: an extend must land before the deadline, and callers judge a question's
// end by its Deadline, not by the store.
//
// # Files
//
// Files are objects of the object store Bucket + "_files", named <question id>/<name>,
// written chunk by chunk with synchronous publishes (see putObject) and read, listed and
// deleted through the object store API. The store's MaxBytes bounds them all, its TTL
// (Limits.FilesTTL) each one. Object names are base64-encoded in their subjects, so
// DeleteFiles lists the bucket to find one question's files.
//
// # Storage reservations
//
// JetStream reserves a bucket's MaxBytes on every server that keeps a replica: the default
// limits (1 GiB of records, 1 GiB of files) need 2 GiB of max_file_store on each server, or
// the buckets are refused ("insufficient storage"); lower the limits on smaller servers.
//
// # Faults
//
// Every call is bounded: by its context, or by Options.OpTimeout when the context has no
// deadline (GetFile's reader too, until it is closed). While the connection to NATS is
// down, calls fail at once with store.ErrUnavailable (the connection buffers nothing
// while it reconnects), and succeed again once it is back: it reconnects for ever. Before
// the client notices a lost server, a call waits for its bound and then fails the same
// way. On a cluster, a leader election makes calls (reads too) fail with
// store.ErrUnavailable for a moment; without a quorum, writes fail closed. A write that
// failed with store.ErrUnavailable may or may not have been applied.
package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/elicitd/elicitd/store"
)

// Options configure a Store.
type Options struct {
	// Bucket names the key-value bucket ("elicitd" by default); the object store for files
	// is Bucket + "_files". Letters, digits, '-' and '_'.
	Bucket string
	// Replicas is how many servers keep each bucket: 1 (default) for one server, 3 for a
	// cluster (it then takes two of three servers up to write).
	Replicas int
	// Limits bound the buckets; zero fields take store's defaults.
	store.Limits
	// MarkerTTL is how long the marker of an expired or deleted record stays (the bucket's
	// LimitMarkerTTL): 1 minute by default, at least 1 second.
	MarkerTTL time.Duration
	// OpTimeout bounds a call whose context has no deadline: 5 s by default.
	OpTimeout time.Duration
	// Clock is what TTLs are computed from, and past-deadline records hidden by: the real
	// clock if nil. JetStream expires messages on its own real clock.
	Clock clock.Clock
}

// Defaults of Options.
const (
	DefaultBucket    = "elicitd"
	DefaultMarkerTTL = time.Minute
	DefaultOpTimeout = 5 * time.Second
)

// headerRoom is what the bucket's message size allows beyond MaxRecordBytes, for the
// headers of a write (TTL, expected sequence): JetStream counts them in its limit.
const headerRoom = 1 << 10

var bucketRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func (o Options) withDefaults() (Options, error) {
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if !bucketRe.MatchString(o.Bucket) {
		return o, fmt.Errorf("store: bucket name %q: want letters, digits, '-' or '_'", o.Bucket)
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	o.Limits = o.Limits.WithDefaults()
	if o.MaxRecordBytes > math.MaxInt32-headerRoom {
		return o, fmt.Errorf("store: MaxRecordBytes %d is too large", o.MaxRecordBytes)
	}
	if o.MarkerTTL <= 0 {
		o.MarkerTTL = DefaultMarkerTTL
	}
	o.MarkerTTL = max(o.MarkerTTL, time.Second)
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	return o, nil
}

// Store is the NATS JetStream store.Store.
type Store struct {
	o     Options
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	files jetstream.ObjectStore
	// filesStream is the object store's stream, to purge chunks by subject.
	filesStream jetstream.Stream
	records     jetstream.Stream // the bucket's stream, for its subjects (list)
	stream      string           // the bucket's stream
	pre         string           // the subject prefix of the bucket's keys: $KV.<bucket>.

	closeOnce sync.Once
	closed    chan struct{}
	owned     []func() // what Close releases, in order
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Replicated    = (*Store)(nil)
	_ store.HealthChecker = (*Store)(nil)
)

// Open opens the store on nc, creating its buckets or bringing their settings up to o's.
// Close does not close nc. nc should be made with ClientOptions (or behave alike): a
// connection that buffers while it reconnects makes calls wait out their timeout instead
// of failing at once.
func Open(ctx context.Context, nc *nats.Conn, o Options) (*Store, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, errors.New("store: no NATS connection")
	}
	ctx, cancel := context.WithTimeout(ctx, max(o.OpTimeout, 10*time.Second))
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("store: NATS JetStream: %w", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, startError(nc, err)
	}
	kv, err := openRecords(ctx, js, o)
	if err != nil {
		if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
			return nil, fmt.Errorf("store: the NATS server is too old: per-key TTLs need nats-server 2.11 or later")
		}
		return nil, fmt.Errorf("store: cannot open the NATS key-value bucket %q (replicas %d, max %d bytes)%s: %w", o.Bucket, o.Replicas, o.MaxBytes, reserveHint(err), classify(err))
	}
	files, err := openFiles(ctx, js, o)
	if err != nil {
		return nil, fmt.Errorf("store: cannot open the NATS object store %q (replicas %d, max %d bytes)%s: %w", o.Bucket+"_files", o.Replicas, o.MaxFilesBytes, reserveHint(err), classify(err))
	}
	filesStream, err := js.Stream(ctx, "OBJ_"+o.Bucket+"_files")
	if err != nil {
		return nil, fmt.Errorf("store: cannot open the NATS object store %q: %w", o.Bucket+"_files", classify(err))
	}
	records, err := js.Stream(ctx, "KV_"+o.Bucket)
	if err != nil {
		return nil, fmt.Errorf("store: cannot open the NATS key-value bucket %q: %w", o.Bucket, classify(err))
	}
	return &Store{o: o, nc: nc, js: js, kv: kv, files: files, filesStream: filesStream, records: records, stream: "KV_" + o.Bucket,
		pre: "$KV." + o.Bucket + ".", closed: make(chan struct{})}, nil
}

// openRecords opens the records' bucket: it creates it if there is none, and brings an
// existing one's settings to o's if they differ (the last node started with other
// settings sets them). It leaves a bucket alone that already has o's settings: every node
// that starts does not rewrite the stream's configuration (which, on a cluster, also
// re-checks the servers' storage reservations).
func openRecords(ctx context.Context, js jetstream.JetStream, o Options) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:         o.Bucket,
		Description:    "elicitd question records",
		History:        1,
		MaxValueSize:   int32(o.MaxRecordBytes + headerRoom),
		MaxBytes:       o.MaxBytes,
		Storage:        jetstream.FileStorage,
		Replicas:       o.Replicas,
		LimitMarkerTTL: o.MarkerTTL,
	}
	kv, err := js.KeyValue(ctx, o.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) { // another node created it just now
			kv, err = js.KeyValue(ctx, o.Bucket)
		}
	}
	if err != nil {
		return nil, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	have, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return nil, fmt.Errorf("unexpected bucket status %T", st)
	}
	h := have.Config()
	if h.History == cfg.History && h.MaxValueSize == cfg.MaxValueSize && h.MaxBytes == cfg.MaxBytes &&
		h.Storage == cfg.Storage && h.Replicas == cfg.Replicas && h.LimitMarkerTTL == cfg.LimitMarkerTTL {
		return kv, nil
	}
	return js.UpdateKeyValue(ctx, cfg)
}

// openFiles opens the files' object store as openRecords opens the records' bucket.
func openFiles(ctx context.Context, js jetstream.JetStream, o Options) (jetstream.ObjectStore, error) {
	cfg := jetstream.ObjectStoreConfig{
		Bucket:      o.Bucket + "_files",
		Description: "elicitd page uploads",
		TTL:         o.FilesTTL,
		MaxBytes:    o.MaxFilesBytes,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
	}
	obs, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, err
	}
	st, err := obs.Status(ctx)
	if err != nil {
		return nil, err
	}
	bs, ok := st.(*jetstream.ObjectBucketStatus)
	if !ok {
		return nil, fmt.Errorf("unexpected object store status %T", st)
	}
	si := bs.StreamInfo()
	if st.TTL() == cfg.TTL && si != nil && si.Config.MaxBytes == cfg.MaxBytes && st.Storage() == cfg.Storage && st.Replicas() == cfg.Replicas {
		return obs, nil
	}
	return js.UpdateObjectStore(ctx, cfg)
}

// reserveHint explains a bucket that JetStream will not place for want of storage.
func reserveHint(err error) string {
	var ae *jetstream.APIError
	if errors.As(err, &ae) && (ae.ErrorCode == 10005 || ae.ErrorCode == 10047 || ae.ErrorCode == 10023) {
		return " (JetStream reserves a bucket's maximum size on every server that keeps it: raise the servers' max_file_store, or lower the store's limits)"
	}
	return ""
}

// startError words a failure of the first JetStream request.
func startError(nc *nats.Conn, err error) error {
	url := nc.ConnectedUrlRedacted()
	if url == "" {
		url = "the embedded server"
	}
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("%w: NATS at %s has no JetStream (start nats-server with -js, or enable it for this account)", store.ErrUnavailable, url)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("%w: NATS at %s does not answer JetStream requests (is JetStream up, with a quorum?): %v", store.ErrUnavailable, url, err)
	}
	return fmt.Errorf("%w: NATS JetStream at %s: %v", store.ErrUnavailable, url, err)
}

// Close releases the store, and the connection and server it owns (Embedded, Connect).
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		for _, f := range s.owned {
			f()
		}
	})
	return nil
}

// begin bounds ctx for one call, and fails at once if the store is closed or NATS is not
// connected.
func (s *Store) begin(ctx context.Context) (context.Context, context.CancelFunc, error) {
	select {
	case <-s.closed:
		return nil, nil, fmt.Errorf("%w: the store is closed", store.ErrUnavailable)
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if st := s.nc.Status(); st != nats.CONNECTED {
		return nil, nil, fmt.Errorf("%w: not connected to NATS (%s)", store.ErrUnavailable, strings.ToLower(st.String()))
	}
	if _, ok := ctx.Deadline(); ok {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.OpTimeout)
	return ctx, cancel, nil
}

// ttl is the TTL of a record with this deadline: the time left, rounded up to whole
// seconds.
func (s *Store) ttl(deadline time.Time) time.Duration {
	left := deadline.Sub(s.o.Clock.Now())
	secs := (left + time.Second - 1) / time.Second
	return max(secs, 1) * time.Second
}

func (s *Store) Create(ctx context.Context, r store.Record) (uint64, error) {
	val, err := store.Encode(r, s.o.Clock.Now(), s.o.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	var rev uint64
	err = whileInProcess(ctx, r.ID, func() (err error) {
		rev, err = s.kv.Create(ctx, store.Key(r.Owner, r.ID), val, jetstream.KeyTTL(s.ttl(r.Deadline)))
		return err
	})
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("%w: %s", store.ErrExists, r.ID)
		}
		return 0, fmt.Errorf("store: create %s: %w", r.ID, classify(err))
	}
	return rev, nil
}

func (s *Store) Get(ctx context.Context, owner, id string) (store.Record, error) {
	if !store.ValidID(id) {
		return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return store.Record{}, err
	}
	defer cancel()
	r, err := s.get(ctx, owner, id)
	if err != nil {
		return store.Record{}, err
	}
	return r, nil
}

// Healthy is nil while the store's connection to NATS is up; ErrUnavailable while it is
// not (down, reconnecting, closed).
func (s *Store) Healthy() error {
	select {
	case <-s.closed:
		return fmt.Errorf("%w: the store is closed", store.ErrUnavailable)
	default:
	}
	if st := s.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("%w: not connected to NATS (%s)", store.ErrUnavailable, strings.ToLower(st.String()))
	}
	return nil
}

// GetLatest is Get answered by the records' stream leader, which has applied every write
// it acknowledged: with more than one replica, Get's direct reads are answered by any
// replica, and one that has not applied the latest writes answers with an older record,
// or none. One replica is its own leader: GetLatest is Get.
func (s *Store) GetLatest(ctx context.Context, owner, id string) (store.Record, error) {
	if s.o.Replicas <= 1 {
		return s.Get(ctx, owner, id)
	}
	if !store.ValidID(id) {
		return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return store.Record{}, err
	}
	defer cancel()
	return s.getLatest(ctx, owner, id)
}

// getLatest is GetLatest once begun.
func (s *Store) getLatest(ctx context.Context, owner, id string) (store.Record, error) {
	if s.o.Replicas <= 1 {
		return s.get(ctx, owner, id)
	}
	m, err := s.leaderGet(ctx, map[string]any{"last_by_subj": s.pre + store.Key(owner, id)})
	switch {
	case errors.Is(err, errNoMessage):
		return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	case err != nil:
		return store.Record{}, fmt.Errorf("store: get %s: %w", id, err)
	case m.marker():
		return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	return s.decode(owner, id, m.Data, m.Seq)
}

// storedMsg is a message of the records' stream as JetStream's message get API returns it.
type storedMsg struct {
	Seq  uint64 `json:"seq"`
	Hdrs []byte `json:"hdrs"`
	Data []byte `json:"data"`
}

// marker reports whether m is a delete, purge or expiry marker: its record is gone.
func (m *storedMsg) marker() bool {
	if len(m.Hdrs) == 0 {
		return false
	}
	h, err := nats.DecodeHeadersMsg(m.Hdrs)
	return err == nil && isMarker(h)
}

// errNoMessage is the message get API's "no message found".
var errNoMessage = errors.New("no message found")

// leaderGet asks JetStream's message get API (not its direct get, which any replica
// answers) for one message of the records' stream: only the stream leader answers it, and
// the leader has applied every write it acknowledged.
func (s *Store) leaderGet(ctx context.Context, req map[string]any) (*storedMsg, error) {
	body, _ := json.Marshal(req)
	msg, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+s.stream, body)
	if err != nil {
		return nil, classify(err)
	}
	var resp struct {
		Message *storedMsg          `json:"message"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("the answer does not decode: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, errNoMessage
	case resp.Error != nil:
		return nil, classify(resp.Error)
	case resp.Message == nil:
		return nil, classify(jetstream.ErrInvalidJetStreamResponse)
	}
	return resp.Message, nil
}

// get reads owner's record id: ErrNotFound if it is not there, or past its deadline.
func (s *Store) get(ctx context.Context, owner, id string) (store.Record, error) {
	e, err := s.kv.Get(ctx, store.Key(owner, id))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
		}
		return store.Record{}, fmt.Errorf("store: get %s: %w", id, classify(err))
	}
	return s.decode(owner, id, e.Value(), e.Revision())
}

// decode is owner's record id from what its key holds at revision rev.
func (s *Store) decode(owner, id string, val []byte, rev uint64) (store.Record, error) {
	r, err := store.Decode(val, rev)
	if err != nil {
		return store.Record{}, err
	}
	if r.Owner != owner || r.ID != id || !r.Deadline.After(s.o.Clock.Now()) {
		return store.Record{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	return r, nil
}

func (s *Store) Update(ctx context.Context, r store.Record) (uint64, error) {
	if r.Revision == 0 {
		return 0, fmt.Errorf("%w: update of %s without a revision", store.ErrInvalid, r.ID)
	}
	val, err := store.Encode(r, s.o.Clock.Now(), s.o.MaxRecordBytes)
	if err != nil {
		return 0, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	// Not kv.Update: it would write the record without a TTL (see the package doc).
	m := &nats.Msg{Subject: s.pre + store.Key(r.Owner, r.ID), Data: val, Header: nats.Header{}}
	var ack *jetstream.PubAck
	err = whileInProcess(ctx, r.ID, func() (err error) {
		ack, err = s.js.PublishMsg(ctx, m,
			jetstream.WithExpectLastSequencePerSubject(r.Revision),
			jetstream.WithMsgTTL(s.ttl(r.Deadline)))
		return err
	})
	if err != nil {
		if isWrongLastSequence(err) {
			return 0, s.mismatch(ctx, r.Owner, r.ID, r.Revision)
		}
		return 0, fmt.Errorf("store: update %s: %w", r.ID, classify(err))
	}
	return ack.Sequence, nil
}

// mismatch tells, after a compare-and-set on rev failed, whether the record is gone
// (ErrNotFound) or has moved on (ErrConflict, also when the read itself fails: the caller
// re-reads either way).
func (s *Store) mismatch(ctx context.Context, owner, id string, rev uint64) error {
	// From the leader: a replica behind the write that made the record would say it is
	// not there, and the caller would end the question as gone.
	if _, err := s.getLatest(ctx, owner, id); errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%w: %s is no longer at revision %d", store.ErrConflict, id, rev)
}

// whileInProcess runs write, a compare-and-set, again while JetStream refuses it because
// another write to its key, id, is in process on the stream leader (10164 on a replicated
// bucket; the write was not proposed): after 5 ms, then twice as long each time, about
// 0.6 s in all. That other write is most often one the leader has acknowledged a moment
// before it stops counting it as in process; or one that lands, and the next try is
// refused as a plain mismatch; or one that never lands (the leader lost its quorum), and
// the refusals go on: then, or when ctx ends first, it returns inProcessError.
func whileInProcess(ctx context.Context, id string, write func() error) error {
	for wait := 5 * time.Millisecond; ; wait *= 2 {
		err := write()
		if !isInProcess(err) {
			return err
		}
		if wait > 320*time.Millisecond {
			return inProcessError(id)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return inProcessError(id)
		}
	}
}

// inProcessError is ErrUnavailable for a write to id refused while another write to it is
// in process, that one's outcome not known yet.
func inProcessError(id string) error {
	return fmt.Errorf("%w: another write to %s is in process, its outcome not known yet", store.ErrUnavailable, id)
}

func (s *Store) Delete(ctx context.Context, owner, id string, rev uint64) error {
	if rev == 0 {
		return fmt.Errorf("%w: delete of %s without a revision", store.ErrInvalid, id)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	// A purge drops the record's data at once; its marker goes after MarkerTTL.
	err = whileInProcess(ctx, id, func() error {
		return s.kv.Purge(ctx, store.Key(owner, id), jetstream.LastRevision(rev), jetstream.PurgeTTL(s.o.MarkerTTL))
	})
	if err != nil {
		if isWrongLastSequence(err) {
			return s.mismatch(ctx, owner, id, rev)
		}
		return fmt.Errorf("store: delete %s: %w", id, classify(err))
	}
	return nil
}

func (s *Store) List(ctx context.Context, owner string) ([]store.Record, error) {
	return s.list(ctx, &owner)
}

var _ store.Scanner = (*Store)(nil)

// All returns every live record, of every owner: one pass over the bucket's keys.
func (s *Store) All(ctx context.Context) ([]store.Record, error) { return s.list(ctx, nil) }

// list returns owner's live records; with owner nil, everyone's. Everything it reads
// comes from the records' stream leader, which has applied every write it acknowledged: the
// keys that hold a message (stream info, filtered by subject), then each key's last message
// (the message get API, one request per key). A consumer, or a direct get, may be answered
// by a replica that has not applied the latest writes, and such a list left out a question
// just created through another server.
func (s *Store) list(ctx context.Context, owner *string) ([]store.Record, error) {
	filter := s.pre + "q.*.*"
	if owner != nil {
		filter = s.pre + store.OwnerPrefix(*owner) + "*"
	}
	subjects, err := s.leaderSubjects(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	now := s.o.Clock.Now()
	var out []store.Record
	for _, subj := range subjects {
		// Each request is bounded on its own: a long list is not cut short by one bound.
		rctx, cancel, err := s.begin(ctx)
		if err != nil {
			return nil, err
		}
		m, err := s.leaderGet(rctx, map[string]any{"last_by_subj": subj})
		cancel()
		if errors.Is(err, errNoMessage) || err == nil && m.marker() {
			continue // deleted or expired meanwhile, or a marker
		}
		if err != nil {
			return nil, fmt.Errorf("store: list: %w", err)
		}
		r, err := store.Decode(m.Data, m.Seq)
		if err != nil {
			return nil, err
		}
		if (owner == nil || r.Owner == *owner) && r.Deadline.After(now) {
			out = append(out, r)
		}
	}
	store.SortRecords(out)
	return out, nil
}

// leaderSubjects returns the subjects matching filter that hold a message in the records'
// stream (a record, or the marker of one gone), as the stream leader's info has them
// (jetstream pages through them).
func (s *Store) leaderSubjects(ctx context.Context, filter string) ([]string, error) {
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	info, err := s.records.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, classify(err)
	}
	return slices.Collect(maps.Keys(info.State.Subjects)), nil
}

// isMarker reports whether a message of the bucket is a delete or purge marker, or the
// marker JetStream leaves where a record expired.
func isMarker(h nats.Header) bool {
	return h.Get("KV-Operation") != "" || h.Get(jetstream.MarkerReasonHeader) != ""
}

// fileName is a file's object name: its question id (which has no '/') and its name.
func fileName(questionID, name string) string { return questionID + "/" + name }

func (s *Store) PutFile(ctx context.Context, questionID, name string, r io.Reader) error {
	if err := store.CheckFile(questionID, name); err != nil {
		return err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	// On any error, putObject removes the chunks it has written.
	err = s.putObject(ctx, fileName(questionID, name), store.LimitReader(r, s.o.MaxFileBytes))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrTooLarge):
		return fmt.Errorf("%w: file %q of %s is over the limit of %d bytes", store.ErrTooLarge, name, questionID, s.o.MaxFileBytes)
	}
	return fmt.Errorf("store: put file %q of %s: %w", name, questionID, classify(err))
}

func (s *Store) GetFile(ctx context.Context, questionID, name string) (io.ReadCloser, error) {
	if err := store.CheckFile(questionID, name); err != nil {
		return nil, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.files.Get(ctx, fileName(questionID, name))
	if err != nil {
		cancel()
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: file %q of %s", store.ErrNotFound, name, questionID)
		}
		return nil, fmt.Errorf("store: get file %q of %s: %w", name, questionID, classify(err))
	}
	return &fileReader{res, cancel}, nil
}

// fileReader reads a file as it arrives; closing it ends its context.
type fileReader struct {
	jetstream.ObjectResult
	cancel context.CancelFunc
}

func (f *fileReader) Close() error {
	err := f.ObjectResult.Close()
	f.cancel()
	return err
}

func (s *Store) DeleteFiles(ctx context.Context, questionID string) error {
	if !store.ValidID(questionID) {
		return fmt.Errorf("%w: question id %q", store.ErrInvalid, questionID)
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	// Object names are base64-encoded in their subjects, so no subject filter selects one
	// question's files: list them all (the bucket holds uploads of open questions only,
	// each gone after FilesTTL at most) and pick by name.
	infos, err := s.files.List(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			return nil
		}
		return fmt.Errorf("store: delete files of %s: %w", questionID, classify(err))
	}
	prefix := questionID + "/"
	for _, info := range infos {
		if !strings.HasPrefix(info.Name, prefix) {
			continue
		}
		if err := s.files.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("store: delete file %q: %w", info.Name, classify(err))
		}
	}
	return nil
}
