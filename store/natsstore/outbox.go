package natsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/elicitd/elicitd/store"
)

// An outbox on JetStream is one work-queue stream and one durable pull consumer, shared by
// every node that opens it:
//
//   - the stream OUTBOX_<bucket>_<name> holds the subject elicitd.<bucket>.outbox.<name>,
//     retention WorkQueue (an acked event is deleted), file storage, the store's replicas,
//     discard new (a full outbox refuses: store.ErrFull), MaxAge, MaxBytes, MaxMsgSize
//     from the options, and Duplicates (the dedupe window) = DedupeWindow;
//   - Add publishes with Nats-Msg-Id = the event's id: JetStream drops a second publish of
//     the id within the window, and says so (a duplicate ack), which Add returns as nil;
//   - the consumer, durable name <name>, acks explicitly, with AckWait from the options and
//     no MaxDeliver (the deliverer bounds its attempts; MaxAge bounds the stream). Every
//     node pulls from it: JetStream hands each message to one pull at a time, until it is
//     acked, nakked or its AckWait lapses. No lease of ours is involved;
//   - Ack is a double ack (it waits for JetStream's confirmation); Nak is "-NAK" with a
//     delay, also waiting for the confirmation, so that both report a failure.
//
// On a cluster (Replicas 3), a write is acknowledged once a majority holds it, so an event
// added is never lost with one server.

// outboxPoll bounds one pull request, and so how long Next goes on once its context ended
// (the node stopping), waiting for its pull to end.
const outboxPoll = time.Second

// minPoll is the shortest pull request Next makes: a context ending sooner is waited out.
const minPoll = 20 * time.Millisecond

// outboxPubRetryWait is the pause before Add publishes again after "no responders".
const outboxPubRetryWait = jetstream.DefaultPubRetryWait

// outboxHeaderRoom is what the stream's message size allows beyond MaxEventBytes, for the
// headers (Nats-Msg-Id).
const outboxHeaderRoom = 1 << 10

// outbox is the JetStream store.Outbox.
type outbox struct {
	s       *Store
	o       store.OutboxOptions
	stream  string
	subject string
	cons    jetstream.Consumer
}

var _ store.Outbox = (*outbox)(nil)

// OutboxStream names the JetStream stream of outbox name in bucket (see Store.Outbox).
func OutboxStream(bucket, name string) string { return "OUTBOX_" + bucket + "_" + name }

// OutboxSubject names the subject the events of outbox name in bucket are published on.
func OutboxSubject(bucket, name string) string { return "elicitd." + bucket + ".outbox." + name }

// Outbox opens the outbox o.Name, creating its stream and consumer or bringing their
// settings to o's (the last node started with other settings sets them). Every node that
// opens the same name on the same NATS shares one queue. The outbox fails with
// store.ErrUnavailable once the store is closed.
func (s *Store) Outbox(ctx context.Context, o store.OutboxOptions) (store.Outbox, error) {
	o = o.WithDefaults()
	if err := o.Check(); err != nil {
		return nil, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	b := &outbox{s: s, o: o, stream: OutboxStream(s.o.Bucket, o.Name), subject: OutboxSubject(s.o.Bucket, o.Name)}
	if err := b.openStream(ctx); err != nil {
		return nil, fmt.Errorf("store: cannot open the outbox stream %q (replicas %d, max %d bytes)%s: %w", b.stream, s.o.Replicas, o.MaxBytes, reserveHint(err), classify(err))
	}
	b.cons, err = s.js.CreateOrUpdateConsumer(ctx, b.stream, jetstream.ConsumerConfig{
		Durable:       o.Name,
		Description:   "elicitd outbox deliverers",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxDeliver:    -1,
		// No cap on entries handed out and not yet acked: an entry waiting out a retry's
		// delay counts as one, and at JetStream's default cap (1000) a receiver down for
		// long would stop every delivery. The stream's MaxBytes bounds the backlog.
		MaxAckPending: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("store: cannot open the outbox consumer %q on %q: %w", o.Name, b.stream, classify(err))
	}
	return b, nil
}

// openStream creates the outbox's stream, or updates it if its settings differ from o's.
func (b *outbox) openStream(ctx context.Context) error {
	cfg := jetstream.StreamConfig{
		Name:        b.stream,
		Description: "elicitd outbox " + b.o.Name,
		Subjects:    []string{b.subject},
		Retention:   jetstream.WorkQueuePolicy,
		Discard:     jetstream.DiscardNew,
		MaxAge:      b.o.MaxAge,
		MaxBytes:    b.o.MaxBytes,
		MaxMsgSize:  int32(min(b.o.MaxEventBytes+outboxHeaderRoom, 1<<30)),
		Storage:     jetstream.FileStorage,
		Replicas:    b.s.o.Replicas,
		Duplicates:  b.o.DedupeWindow,
	}
	st, err := b.s.js.Stream(ctx, b.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = b.s.js.CreateStream(ctx, cfg)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return err // created, or failed
		}
		st, err = b.s.js.Stream(ctx, b.stream) // another node created it just now
	}
	if err != nil {
		return err
	}
	h := st.CachedInfo().Config
	if h.MaxAge == cfg.MaxAge && h.MaxBytes == cfg.MaxBytes && h.MaxMsgSize == cfg.MaxMsgSize &&
		h.Replicas == cfg.Replicas && h.Duplicates == cfg.Duplicates && h.Discard == cfg.Discard {
		return nil
	}
	_, err = b.s.js.UpdateStream(ctx, cfg)
	return err
}

// Len returns the entries in the outbox's stream: a work queue, from which an entry goes
// once acknowledged. It asks the stream's leader (one round trip).
func (b *outbox) Len(ctx context.Context) (int, error) {
	ctx, cancel, err := b.s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	st, err := b.s.js.Stream(ctx, b.stream)
	if err != nil {
		return 0, fmt.Errorf("store: outbox %s: %w", b.o.Name, classify(err))
	}
	return int(st.CachedInfo().State.Msgs), nil
}

// Add publishes the event with its id as Nats-Msg-Id; a duplicate is not an error. While
// the stream has no leader to answer (an election, a quorum being restored: "no
// responders"), the client publishes again every 250 ms until ctx ends (OpTimeout if it
// has no deadline): the Nats-Msg-Id keeps a publish that landed twice once.
func (b *outbox) Add(ctx context.Context, id string, payload []byte) error {
	if err := store.CheckOutboxEvent(b.o, id, payload); err != nil {
		return err
	}
	ctx, cancel, err := b.s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	// As many retries as ctx leaves room for (begin gave it a deadline): the client has no
	// "until ctx ends" for a synchronous publish.
	dl, _ := ctx.Deadline()
	retries := max(int(time.Until(dl)/outboxPubRetryWait), jetstream.DefaultPubRetryAttempts)
	_, err = b.s.js.PublishMsg(ctx, &nats.Msg{Subject: b.subject, Data: payload},
		jetstream.WithMsgID(id), jetstream.WithExpectStream(b.stream),
		jetstream.WithRetryAttempts(retries), jetstream.WithRetryWait(outboxPubRetryWait))
	if err != nil {
		return fmt.Errorf("store: add event %s to outbox %s: %w", id, b.o.Name, classify(err))
	}
	return nil
}

// Next pulls one message, one bounded pull request after another, until one comes or ctx
// ends. A pull request is never left behind: JetStream would hand it a message added
// meanwhile (by any node) with nobody reading it, and the message would wait out its
// AckWait (a minute) before another pull got it. So the pull is not tied to ctx: when ctx
// ends, Next waits for the pull to end (outboxPoll at most) and hands back at once what it
// brought.
func (b *outbox) Next(ctx context.Context) (store.Delivery, error) {
	for {
		// Fail at once when closed or not connected, as every call of the store does.
		_, cancel, err := b.s.begin(ctx)
		if err != nil {
			return nil, err
		}
		cancel()
		wait := outboxPoll
		if dl, ok := ctx.Deadline(); ok {
			// Ending a tenth before ctx's deadline, so that what the pull brings comes
			// before it, not to be handed back as ctx ends.
			wait = min(wait, time.Until(dl)*9/10)
		}
		if wait < minPoll {
			// ctx's deadline is too near for a pull request (JetStream wants a positive
			// expiry): wait it out.
			<-ctx.Done()
			return nil, ctx.Err()
		}
		// The server ends the pull after wait (408), and the client then: the pull's end is
		// what ends the batch, never the client alone.
		batch, err := b.cons.Fetch(1, jetstream.FetchMaxWait(wait))
		if errors.Is(err, nats.ErrNoResponders) {
			if err := leaderless(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store: outbox %s: %w", b.o.Name, classify(err))
		}
		var got jetstream.Msg
		select {
		case got = <-batch.Messages():
		case <-ctx.Done():
		}
		for m := range batch.Messages() { // until the pull has ended: its goroutine with it
			if got == nil {
				got = m
			}
		}
		ferr := batch.Error()
		if got != nil {
			d, err := b.delivery(got)
			if err != nil {
				return nil, err
			}
			if ctx.Err() != nil { // it came as ctx ended: hand it back at once
				nctx, ncancel := context.WithTimeout(context.Background(), b.s.o.OpTimeout)
				_ = d.Nak(nctx, 0)
				ncancel()
				return nil, ctx.Err()
			}
			return d, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if errors.Is(ferr, nats.ErrNoResponders) {
			if err := leaderless(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if ferr != nil && !errors.Is(ferr, context.DeadlineExceeded) && !errors.Is(ferr, jetstream.ErrNoMessages) &&
			!errors.Is(ferr, nats.ErrTimeout) {
			return nil, fmt.Errorf("store: outbox %s: %w", b.o.Name, classify(ferr))
		}
	}
}

// leaderless waits before a pull that no consumer answered ("no responders": one just made,
// or moving, whose leader is not elected yet, or one deleted that a node makes again as it
// opens the outbox) is tried again, as Add waits before it publishes again; ctx's error if
// ctx ends first.
func leaderless(ctx context.Context) error {
	t := time.NewTimer(outboxPubRetryWait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *outbox) delivery(m jetstream.Msg) (*natsDelivery, error) {
	meta, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("store: outbox %s: a message without metadata: %w", b.o.Name, err)
	}
	return &natsDelivery{b: b, m: m, id: m.Headers().Get(jetstream.MsgIDHeader), attempt: int(meta.NumDelivered)}, nil
}

// natsDelivery is one message pulled from the outbox's consumer.
type natsDelivery struct {
	b       *outbox
	m       jetstream.Msg
	id      string
	attempt int

	mu      sync.Mutex
	settled bool
}

func (d *natsDelivery) ID() string      { return d.id }
func (d *natsDelivery) Payload() []byte { return d.m.Data() }
func (d *natsDelivery) Attempt() int    { return d.attempt }

// settle marks d settled, once.
func (d *natsDelivery) settle() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return fmt.Errorf("%w: event %s", store.ErrSettled, d.id)
	}
	d.settled = true
	return nil
}

func (d *natsDelivery) Ack(ctx context.Context) error {
	if err := d.settle(); err != nil {
		return err
	}
	ctx, cancel, err := d.b.s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := d.m.DoubleAck(ctx); err != nil {
		return fmt.Errorf("store: ack event %s: %w", d.id, classify(err))
	}
	return nil
}

// Nak sends "-NAK" with the delay to the message's reply subject and waits for
// JetStream's confirmation (the client's NakWithDelay does not wait for it).
func (d *natsDelivery) Nak(ctx context.Context, delay time.Duration) error {
	if err := d.settle(); err != nil {
		return err
	}
	ctx, cancel, err := d.b.s.begin(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	body := []byte("-NAK")
	if delay > 0 {
		body = fmt.Appendf(nil, `-NAK {"delay": %d}`, delay.Nanoseconds())
	}
	if _, err := d.b.s.nc.RequestWithContext(ctx, d.m.Reply(), body); err != nil {
		return fmt.Errorf("store: nak event %s: %w", d.id, classify(err))
	}
	return nil
}
