// Package store is the seam for everything about a question that must outlive the process
// that asked it: one Record per question, in elicitd's own terms, behind one interface with
// two implementations, run by one contract test suite (package storetest):
//
//   - store/memory keeps records in this process, as elicitd always did: nothing survives a
//     restart and no other node sees them. Expiry runs on an injected clock.
//   - store/natsstore keeps records in a NATS JetStream key-value bucket (an embedded
//     nats-server on a data directory, or an external cluster) and page uploads in a
//     JetStream object store. Expiry runs on JetStream's per-message TTLs, in real time.
//
// Nothing else goes through the store: go-sdk sessions, live goroutines and their timers
// stay in the memory of the node that runs them.
//
// # Records and revisions
//
// A Record is small (0.5-2 KB typical, a multi-round flow 2-4 KB) and JSON-encoded; the store
// refuses one whose encoding is over Limits.MaxRecordBytes (ErrTooLarge). Every write gives
// the record a new Revision, and Update and Delete are compare-and-set on it: they succeed
// only when the caller's Revision is still the record's. Of any number of writers holding
// one revision, exactly one wins; the others get ErrConflict, re-read, and decide again.
// Every transition that can race (an answer round claimed, a timeout, a cancel, an extend,
// a take-over by another node) must rest on that compare-and-set alone, never on a read: a
// read may be stale (on a NATS cluster, a follower may serve it).
//
// A write that fails with ErrUnavailable has an unknown outcome: the store may have applied
// it. A caller that retries a compare-and-set after ErrUnavailable and gets ErrConflict
// re-reads the record to learn whether its own write was the one that landed.
//
// # Expiry
//
// A record lives until its Deadline, and every write (Create and Update alike) sets its
// expiry from the Deadline it carries: an extend is an Update with a later Deadline. From
// the Deadline on, Get and List no longer return it, and the store reclaims it: the
// memory store at once on its clock; the NATS store within about a second (JetStream TTLs
// are whole seconds, rounded up, so a record never goes before its Deadline). Once
// reclaimed, its id may be created again. A question past its Deadline is therefore gone
// on every node, whether or not the node that held it is alive.
//
// # Keys and owners
//
// Records are keyed q.<owner digest>.<id>: the owner (any string, such as a client session
// id) is hashed into a short digest that a key may hold, so that List reads one owner's
// records by key filter, never every record. Get, Update and Delete name the owner too:
// another owner's id is simply not found.
//
// # Files
//
// Page uploads (PutFile) are stored beside the records, by question id and name, each at
// most Limits.MaxFileBytes and all together at most Limits.MaxFilesBytes. The caller
// deletes a question's files (DeleteFiles) when the question ends; a file also goes
// Limits.FilesTTL after it was put, so that a question that ends with its node never
// leaves files behind for ever.
//
// # Limits
//
// A full store refuses, it never evicts: Create (or an Update that grows a record) past
// Limits.MaxBytes fails with ErrFull, and PutFile past Limits.MaxFilesBytes too. A caller
// refuses the new question, rather than lose an open one.
package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The store's errors. Implementations wrap them (errors.Is finds them) with what caused them.
var (
	// ErrExists: Create found a live record with that id and owner.
	ErrExists = errors.New("store: the record exists")
	// ErrNotFound: no such live record (never created, deleted, or past its deadline), or no
	// such file.
	ErrNotFound = errors.New("store: no such record")
	// ErrConflict: the record's revision is no longer the caller's; re-read it.
	ErrConflict = errors.New("store: the record has changed (revision mismatch)")
	// ErrUnavailable: the store cannot be reached (or is closed). A caller turns it into the
	// STORE_UNAVAILABLE tool error. After a write, the write's outcome is unknown.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrInProcess: an outbox add found an earlier add of the same id still being processed
	// (it is an ErrUnavailable: try again). Should it last, the earlier add was lost
	// without being stored: a NATS stream leader that proposed a message and lost its
	// quorum may keep its id as in process until the dedupe window ends.
	ErrInProcess = fmt.Errorf("%w: an add of this id is still in process", ErrUnavailable)
	// ErrFull: the store holds as many bytes as it may; it refuses new data, and evicts
	// nothing.
	ErrFull = errors.New("store: full")
	// ErrTooLarge: one record or one file is over its size limit.
	ErrTooLarge = errors.New("store: too large")
	// ErrInvalid: the record or the call is malformed (no id or owner, an id a key cannot
	// hold, a deadline already past, a zero revision for a compare-and-set).
	ErrInvalid = errors.New("store: invalid")
)

// Store holds question records and page uploads. Its methods are safe for concurrent use.
type Store interface {
	// Create stores a new record, whose Revision it ignores, and returns its revision. It
	// fails with ErrExists if a live record has the same owner and id.
	Create(ctx context.Context, r Record) (rev uint64, err error)
	// Get returns owner's record id, its Revision set; ErrNotFound if there is none or it
	// is past its deadline.
	Get(ctx context.Context, owner, id string) (Record, error)
	// Update replaces the record if its revision is still r.Revision (compare-and-set) and
	// returns the new revision. ErrConflict if the record has moved on, ErrNotFound if it
	// is gone. The record expires at r.Deadline (which may move it later: an extend).
	Update(ctx context.Context, r Record) (rev uint64, err error)
	// Delete removes the record if its revision is still rev: ErrConflict if it has moved
	// on, ErrNotFound if it is gone.
	Delete(ctx context.Context, owner, id string, rev uint64) error
	// List returns owner's live records, oldest first (by Created, then ID).
	List(ctx context.Context, owner string) ([]Record, error)

	// PutFile stores r, read to its end, as the file name of question questionID,
	// replacing one of that name. ErrTooLarge past Limits.MaxFileBytes (nothing is kept),
	// ErrFull past Limits.MaxFilesBytes.
	PutFile(ctx context.Context, questionID, name string, r io.Reader) error
	// GetFile opens a file stored by PutFile; ErrNotFound if there is none. ctx bounds the
	// reading too; the caller closes the reader.
	GetFile(ctx context.Context, questionID, name string) (io.ReadCloser, error)
	// DeleteFiles deletes every file of question questionID (none is not an error).
	DeleteFiles(ctx context.Context, questionID string) error

	// Shared returns the value kept under name, keeping value there first if there is none
	// (create-if-absent), so that every node sharing the store gets the same one: the
	// requestState key, say. Such a value never expires. name: 1-128 letters, digits, '-',
	// '_' or '='.
	Shared(ctx context.Context, name string, value []byte) ([]byte, error)

	// Close releases the store; every call after it fails with ErrUnavailable. Closing
	// twice is not an error.
	Close() error
}

// Replicated is a Store whose Get may answer from a replica that has not applied the
// latest acknowledged writes yet (JetStream's direct get, which any replica of an R3
// bucket answers), so a record read right after another node wrote it may be missing or
// older. GetLatest reads the record as the last acknowledged write left it (from the
// leader), at some cost; a node uses it where Get's answer contradicts what a request
// proves was written (a requestState for a round the record has not handed out).
type Replicated interface {
	GetLatest(ctx context.Context, owner, id string) (Record, error)
}

// Scanner is a Store that can read every live record, of every owner (rosters included):
// what a node that finds another dead reads, once, to take over the questions that node
// held asleep, whose owners it does not know.
type Scanner interface {
	All(ctx context.Context) ([]Record, error)
}

// HealthChecker is a Store that can tell, without a round trip, whether it can be reached
// now (its connection is up): a node's readiness for a load balancer.
type HealthChecker interface {
	Healthy() error
}

// Relay carries requests between the nodes that share a store: a retry that lands on one
// node is forwarded to the node whose goroutine holds its question. Delivery is at most
// once; a node that is not running answers ErrNoNode at once, which is the signal for
// another node to take its questions over.
type Relay interface {
	// Serve has h answer the requests sent to node until stop is called. h runs on a
	// goroutine of its own for each request; its ctx ends with stop.
	Serve(node string, h func(ctx context.Context, msg []byte) []byte) (stop func(), err error)
	// Send sends msg to node and returns its answer: ErrNoNode if no process serves node,
	// ErrUnavailable if the relay cannot be reached, ctx's error if it ends first.
	Send(ctx context.Context, node string, msg []byte) ([]byte, error)
}

// Notifier is a Relay that also sends notices: one message to a node's handler, whose answer
// nobody waits for. Delivery is at most once, as a request's; a notice to a node that is not
// running is lost without an error.
type Notifier interface {
	Notify(node string, msg []byte) error
}

// ErrNoNode: no process serves the node a request was sent to (it stopped, or died).
var ErrNoNode = errors.New("store: no such node is running")

// Record is one question, in elicitd's own terms. It is JSON-encoded in the store, small
// (0.5-2 KB typical), and every field but Revision is the caller's.
type Record struct {
	ID    string `json:"id"`    // the question's id: letters, digits, '-', '_', '=' (a key's part)
	Owner string `json:"owner"` // who may see and act on it, such as a client session id
	Tool  string `json:"tool,omitempty"`
	// ArgsDigest is a digest of the arguments of the call that asked it: a retry must bring
	// the same.
	ArgsDigest string `json:"args,omitempty"`
	// Era is "push" (2025-11-25 and earlier: the question stays on the node holding its
	// session) or "pull" (2026-07-28: any node may serve a retry).
	Era string `json:"era,omitempty"`

	// Node is the node whose goroutine holds the question, and Epoch its fencing counter:
	// a take-over is a compare-and-set of {Node, Epoch+1}, after which every write of the
	// former holder fails its compare-and-set.
	Node  string `json:"node,omitempty"`
	Epoch uint64 `json:"epoch,omitempty"`
	// Asleep: no goroutine holds the question between its rounds: it hibernates, and Node
	// keeps only its deadline's timer. A retry on any node wakes it there by replaying its
	// log (a take-over, with no forwarding to Node first).
	Asleep bool `json:"asleep,omitempty"`

	Created  time.Time `json:"created"`
	Deadline time.Time `json:"deadline"` // the record expires here; required
	// Due is when the question ends unless answered; the record outlives it (Deadline),
	// so that a retry after it hears the question timed out, on any node.
	Due time.Time `json:"due,omitzero"`
	// Idle, if set, is when the question ends as abandoned unless its client comes back.
	Idle time.Time `json:"idle,omitzero"`
	// Keep, if set, is the earliest Deadline a writer may give the record: something that
	// could write the record again (a requestState that carries it) is honoured until then.
	Keep time.Time `json:"keep,omitzero"`

	// Handed is the last round handed out, Claimed the last round whose requestState was
	// used: a round is claimed once (single use), by compare-and-set.
	Handed  int `json:"handed,omitempty"`
	Claimed int `json:"claimed,omitempty"`
	// Attempts is the current attempt count of the round being asked.
	Attempts int `json:"attempts,omitempty"`

	// State is the question's state (pending, active, completed, cancelled, timeout) and
	// Reason why it ended, in the words of package elicitation.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`

	// Log is every answered round, in order: what a replay answers each Ask from.
	Log []Round `json:"log,omitempty"`
	// Outcome is what the last claimed round answered the client, recorded once known, so
	// that an identical resend gets it again on any node.
	Outcome json.RawMessage `json:"outcome,omitempty"`
	// Ends are the ends of the call's questions that came with Outcome (answered, timed out
	// or cancelled since the round before), as the writer encoded them for its OnEnd: the
	// write that records an outcome carries them, so that a node serving Outcome to a resend
	// reports them, though the node that wrote it never learnt its write landed, or died.
	// They hold only what may leave the question (never an answer asked on the page).
	Ends json.RawMessage `json:"ends,omitempty"`
	// Prompt is the digest of the prompt of the round handed out (Handed), and ClaimSum the
	// digest of the response that claimed the last claimed round: a resend with the same
	// response is the same request again, one with another is a second use.
	Prompt   string `json:"prompt,omitempty"`
	ClaimSum string `json:"claim,omitempty"`
	// Question is the id of the question being asked (the one list_elicitations shows, and
	// cancel_elicitation and extend_elicitation name), Title its title.
	Question string `json:"question,omitempty"`
	Title    string `json:"title,omitempty"`
	// Asks is the number of the question being asked among the call's (1 for its first).
	Asks int `json:"asks,omitempty"`
	// Asked is when the question being asked was first asked (Created is the call's start):
	// its age, and the lifetime that bounds its extensions, count from it wherever it is
	// resumed. Zero in records written before it existed: QuestionCreated falls back.
	Asked time.Time `json:"asked,omitzero"`

	// Open lists, in a node's roster record, the 2025-11-25 questions the node has open:
	// their sessions live in its memory only, and when it dies the survivors end them.
	Open []OpenQuestion `json:"open,omitempty"`

	// Page is the question's URL-mode page link, if it has one.
	Page *PageLink `json:"page,omitempty"`

	// Task, in a task's record (Era "task": package tasks), is the task as that package
	// keeps it: its status, the call's requestState and what it is waiting for or ended
	// with. The call's questions have their own records.
	Task json.RawMessage `json:"task,omitempty"`

	// Revision is set by the store on every read and write; Update and Delete compare it.
	Revision uint64 `json:"-"`
}

// QuestionCreated is when rec's question was first asked: Asked, or, in a record without
// it, Created (the call's start, when its first question was asked).
func QuestionCreated(rec Record) time.Time {
	if rec.Asked.IsZero() {
		return rec.Created
	}
	return rec.Asked
}

// Round is one answered round of a question.
type Round struct {
	// Prompt is a short digest of the prompt: a replay whose prompt differs ends with a
	// divergence error instead of answering from the wrong round.
	Prompt string `json:"prompt"`
	// Answers are the round's validated answers, as the caller encoded them. Secrets do not
	// belong here: whoever can read the store can read them.
	Answers json.RawMessage `json:"answers,omitempty"`
	// Attempts is how many attempts the round took.
	Attempts int       `json:"attempts,omitempty"`
	At       time.Time `json:"at"`
}

// OpenQuestion is one entry of a node's roster (Record.Open).
type OpenQuestion struct {
	ID      string    `json:"id"`
	Tool    string    `json:"tool,omitempty"`
	Owner   string    `json:"owner,omitempty"` // OwnerDigest of the owner
	Created time.Time `json:"created"`
	// The end of a question that ended as its node stopped, left in the node's roster for
	// a survivor to report again (its own report may not have gone out): State is empty
	// for a question still open.
	State    string    `json:"state,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Attempts int       `json:"attempts,omitempty"`
	Ended    time.Time `json:"ended,omitzero"`
}

// PageLink is a question's URL-mode page, enough for any node to serve it.
type PageLink struct {
	TokenHash string `json:"token"`           // digest of the link's secret token
	BoundHash string `json:"bound,omitempty"` // digest of the binding cookie of the browser that opened it first
	CSRF      string `json:"csrf"`            // the token the page's form carries
}

// Limits bound a store. Zero fields take the defaults below.
type Limits struct {
	MaxRecordBytes int           // one record, JSON-encoded; default 64 KiB
	MaxBytes       int64         // all records together; default 1 GiB
	MaxFileBytes   int64         // one file; default 10 MiB
	MaxFilesBytes  int64         // all files together; default 1 GiB
	FilesTTL       time.Duration // a file's life at most; default 24 h
}

// The default Limits.
const (
	DefaultMaxRecordBytes = 64 << 10
	DefaultMaxBytes       = 1 << 30
	DefaultMaxFileBytes   = 10 << 20
	DefaultMaxFilesBytes  = 1 << 30
	DefaultFilesTTL       = 24 * time.Hour
)

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxRecordBytes <= 0 {
		l.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxFilesBytes <= 0 {
		l.MaxFilesBytes = DefaultMaxFilesBytes
	}
	if l.FilesTTL <= 0 {
		l.FilesTTL = DefaultFilesTTL
	}
	return l
}

// maxIDLen bounds an id (and a file name's question id).
const maxIDLen = 128

// ValidID reports whether id can name a record: 1-128 letters, digits, '-', '_' or '='.
func ValidID(id string) bool { return validName(id, maxIDLen, "") }

// validName reports whether id is 1 to max letters, digits, '-', '_', '=' or one of extra.
func validName(id string, max int, extra string) bool {
	if id == "" || len(id) > max {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '=':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// OwnerDigest is the short digest of owner that keys hold: 128 bits of SHA-256, base64url
// without padding (22 characters, each one a key may hold).
func OwnerDigest(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// OwnerPrefix is the prefix of the keys of owner's records, ending with '.'.
func OwnerPrefix(owner string) string { return "q." + OwnerDigest(owner) + "." }

// Key is the key of owner's record id: q.<owner digest>.<id>.
func Key(owner, id string) string { return OwnerPrefix(owner) + id }

// Check reports (as ErrInvalid) what makes r unfit to store at now: no owner, an invalid
// id, or a deadline not after now.
func Check(r Record, now time.Time) error {
	switch {
	case r.Owner == "":
		return fmt.Errorf("%w: the record has no owner", ErrInvalid)
	case !ValidID(r.ID):
		return fmt.Errorf("%w: id %q: want 1-%d letters, digits, '-', '_' or '='", ErrInvalid, r.ID, maxIDLen)
	case r.Deadline.IsZero():
		return fmt.Errorf("%w: record %s has no deadline", ErrInvalid, r.ID)
	case !r.Deadline.After(now):
		return fmt.Errorf("%w: record %s: its deadline %s has passed", ErrInvalid, r.ID, r.Deadline.Format(time.RFC3339Nano))
	}
	return nil
}

// Encode checks r (see Check) and returns its JSON encoding, or ErrTooLarge if that is over
// max bytes.
func Encode(r Record, now time.Time, max int) ([]byte, error) {
	if err := Check(r, now); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: record %s does not encode: %v", ErrInvalid, r.ID, err)
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: record %s is %d bytes encoded, over the limit of %d", ErrTooLarge, r.ID, len(b), max)
	}
	return b, nil
}

// Decode decodes a record stored by Encode, at revision rev.
func Decode(b []byte, rev uint64) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("store: a stored record does not decode: %w", err)
	}
	r.Revision = rev
	return r, nil
}

// CheckFile reports (as ErrInvalid) a question id or file name a file cannot have.
func CheckFile(questionID, name string) error {
	if !ValidID(questionID) {
		return fmt.Errorf("%w: question id %q", ErrInvalid, questionID)
	}
	if name == "" || len(name) > 255 {
		return fmt.Errorf("%w: file name %q: want 1-255 bytes", ErrInvalid, name)
	}
	return nil
}

// LimitReader reads r, failing with ErrTooLarge once it has given more than max bytes.
func LimitReader(r io.Reader, max int64) io.Reader { return &limited{r: r, left: max} }

type limited struct {
	r    io.Reader
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, ErrTooLarge
	}
	// Read one byte more than allowed, to tell "exactly max" from "more".
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, ErrTooLarge
	}
	return n, err
}

// SortRecords sorts records oldest first: by Created, then by ID.
func SortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
}
