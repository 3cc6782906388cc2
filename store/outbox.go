package store

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// Outbox is a queue of events waiting to be delivered, shared by every node of a store: an
// event added on one node may be delivered by any node. It is the store's side of the
// webhook deliverer (package webhook); it knows nothing of HTTP.
//
// # Contract
//
//   - Add queues an event by id, at once: it never waits for a deliverer. Adding an id that
//     was added within OutboxOptions.DedupeWindow (even one delivered since) is not an
//     error, and queues nothing: the first payload stands. So a caller whose Add failed
//     with ErrUnavailable (its outcome unknown) adds the same id again.
//   - Next hands one event to one caller. Until that caller settles it (Ack or Nak), or
//     OutboxOptions.AckWait passes, no caller, on this node or another, gets it.
//   - Ack ends the event: it is not handed out again. Nak hands it back, to be handed out
//     again once its delay has passed, with Attempt one more. An event neither acked nor
//     nakked within AckWait (its deliverer died) is handed out again, Attempt one more.
//   - An event is dropped OutboxOptions.MaxAge after it was added, delivered or not: the
//     deliverer gives up well before that; MaxAge only bounds what a stuck queue holds.
//   - A full outbox refuses (ErrFull, past OutboxOptions.MaxBytes) and evicts nothing; an
//     event over OutboxOptions.MaxEventBytes is refused with ErrTooLarge.
//
// Delivery is at least once: a deliverer that dies after delivering an event but before
// acking it has the event delivered again. Receivers deduplicate by id.
//
// Implementations: memory.Outbox (one process, on an injected clock) and the outbox of
// natsstore.Store (a JetStream work-queue stream and one durable pull consumer shared by
// every node). Both are run by storetest.RunOutbox.
type Outbox interface {
	// Add queues payload as the event id (see ValidOutboxID). It returns once the event is
	// stored (or found already added), never waiting for a delivery.
	Add(ctx context.Context, id string, payload []byte) error
	// Next waits until an event is ready and hands it to this caller alone; it returns
	// ctx's error when ctx ends first, ErrUnavailable when the store cannot be reached. An
	// event that comes as ctx ends is handed out, or left for the next Next at once: never
	// held by a Next that has returned (natsstore's waits for its pull request to end, a
	// second at most, so that JetStream hands it nothing once nobody reads it).
	// Safe for concurrent use: each concurrent caller gets another event.
	Next(ctx context.Context) (Delivery, error)
}

// OutboxLen is an Outbox that can say how many entries it holds: queued, waiting out a
// retry's delay, or handed out and not yet acknowledged. An entry just acknowledged may
// be counted for a moment more (a replicated stream drops it once its servers apply the
// ack). Both implementations are.
type OutboxLen interface {
	Len(ctx context.Context) (int, error)
}

// Delivery is one event handed out by Outbox.Next, to be settled once: by Ack or by Nak.
// Settling it a second time fails with ErrSettled.
type Delivery interface {
	// ID is the event's id, as added.
	ID() string
	// Payload is the event's payload, as added first.
	Payload() []byte
	// Attempt is how many times the event has been handed out, this time included: 1 the
	// first time.
	Attempt() int
	// Ack ends the event: it is never handed out again.
	Ack(ctx context.Context) error
	// Nak hands the event back, to be handed out again no sooner than delay from now.
	Nak(ctx context.Context, delay time.Duration) error
}

// OutboxOptions configure an outbox. Zero fields take the defaults below.
type OutboxOptions struct {
	// Name names the outbox: every node opening the same name shares one queue. 1-32
	// letters, digits, '-' or '_'; "webhooks" by default.
	Name string
	// AckWait is how long a handed-out event stays its caller's alone before it is handed
	// out again: longer than one delivery attempt takes. 1 minute by default.
	AckWait time.Duration
	// MaxAge drops an event this long after it was added, delivered or not. 72 hours by
	// default; at least DedupeWindow.
	MaxAge time.Duration
	// DedupeWindow is how long an added id is remembered: adding it again within the window
	// queues nothing. 1 hour by default.
	DedupeWindow time.Duration
	// MaxBytes bounds the events held (ids and payloads): 64 MiB by default.
	MaxBytes int64
	// MaxEventBytes bounds one payload: 256 KiB by default.
	MaxEventBytes int
}

// The default OutboxOptions.
const (
	DefaultOutboxName          = "webhooks"
	DefaultOutboxAckWait       = time.Minute
	DefaultOutboxMaxAge        = 72 * time.Hour
	DefaultOutboxDedupeWindow  = time.Hour
	DefaultOutboxMaxBytes      = 64 << 20
	DefaultOutboxMaxEventBytes = 256 << 10
)

var outboxNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// WithDefaults returns o with its zero fields set to the defaults.
func (o OutboxOptions) WithDefaults() OutboxOptions {
	if o.Name == "" {
		o.Name = DefaultOutboxName
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultOutboxAckWait
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultOutboxMaxAge
	}
	if o.DedupeWindow <= 0 {
		o.DedupeWindow = DefaultOutboxDedupeWindow
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultOutboxMaxBytes
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = DefaultOutboxMaxEventBytes
	}
	return o
}

// Check reports (as ErrInvalid) options an outbox cannot have: a bad name, a dedupe window
// longer than MaxAge, or a MaxEventBytes over MaxBytes. Call it on WithDefaults' result.
func (o OutboxOptions) Check() error {
	switch {
	case !outboxNameRe.MatchString(o.Name):
		return fmt.Errorf("%w: outbox name %q: want 1-32 letters, digits, '-' or '_'", ErrInvalid, o.Name)
	case o.DedupeWindow > o.MaxAge:
		return fmt.Errorf("%w: outbox %s: the dedupe window %s is longer than the events' max age %s", ErrInvalid, o.Name, o.DedupeWindow, o.MaxAge)
	case int64(o.MaxEventBytes) > o.MaxBytes:
		return fmt.Errorf("%w: outbox %s: one event may be %d bytes, more than the outbox's %d", ErrInvalid, o.Name, o.MaxEventBytes, o.MaxBytes)
	}
	return nil
}

// maxOutboxIDLen bounds an event id.
const maxOutboxIDLen = 255

// ValidOutboxID reports whether id can name an outbox event: 1-255 letters, digits, '-',
// '_', '=' or '.'.
func ValidOutboxID(id string) bool { return validName(id, maxOutboxIDLen, ".") }

// CheckOutboxEvent reports what makes an event unfit to add under o: an invalid id
// (ErrInvalid) or a payload over o.MaxEventBytes (ErrTooLarge).
func CheckOutboxEvent(o OutboxOptions, id string, payload []byte) error {
	if !ValidOutboxID(id) {
		return fmt.Errorf("%w: event id %q: want 1-%d letters, digits, '-', '_', '=' or '.'", ErrInvalid, id, maxOutboxIDLen)
	}
	if len(payload) > o.MaxEventBytes {
		return fmt.Errorf("%w: event %s is %d bytes, over the limit of %d", ErrTooLarge, id, len(payload), o.MaxEventBytes)
	}
	return nil
}

// ErrSettled: a Delivery was acked or nakked already. It wraps ErrInvalid.
var ErrSettled = fmt.Errorf("%w: the delivery is settled already", ErrInvalid)
