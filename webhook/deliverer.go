package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/elicitd/elicitd/store"
)

// Options configure a Deliverer.
type Options struct {
	// URLs are the receivers: every event goes to each of them. Each must pass ParseURL.
	URLs []string
	// Secret signs every webhook: "whsec_" and base64 (NewSecret makes one). Every
	// receiver verifies with it.
	Secret string
	// Outbox holds the events until they are delivered: the store's (natsstore.Store's
	// Outbox, shared by every node) or a memory.Outbox. Required.
	Outbox store.Outbox
	// AllowPrivate accepts http:// URLs and receivers on loopback or private addresses.
	AllowPrivate bool
	// Answers puts the questions' answers in the events, less the sensitive fields'
	// (Ending.Sensitive), which never leave.
	Answers bool
	// HTTPClient sends the webhooks: Client(AllowPrivate) if nil. One of the caller's own
	// should refuse redirects and private addresses as Client does.
	HTTPClient *http.Client
	// Clock times the retries, the webhook-timestamp header and the pause after the outbox
	// failed (the store unavailable): the real clock if nil.
	Clock clock.Clock
	// Backoff says when a failed delivery is retried and when it is given up.
	Backoff Backoff
	// Workers is how many deliveries may be under way at once: 4 by default.
	Workers int
	// Timeout bounds one POST, from connecting to the answer's status: 10 s by default.
	// Keep it well under the outbox's AckWait.
	Timeout time.Duration
	// QueueWithin is how long Queue goes on adding an event the outbox could not take (the
	// store unavailable, or an add that timed out), on Clock, from Queue's call: 5 minutes by
	// default (NATS losing its quorum twice in a row kept it out for over a minute in the
	// robustness suite's long run; well inside the outbox's hour of id dedupe). Past it, the
	// event is lost (logged, and counted in Stats.Lost).
	QueueWithin time.Duration
	// Logger gets a line for each retry and each event given up or lost (ids, URLs without
	// their query, statuses; never a payload): nothing is logged if nil.
	Logger *slog.Logger
}

// The defaults of Options.
const (
	DefaultWorkers     = 4
	DefaultTimeout     = 10 * time.Second
	DefaultQueueWithin = 5 * time.Minute
)

// queueTry bounds one add of Queue's: the one its caller waits for, and each later one.
const queueTry = 2 * time.Second

// The pauses between Queue's adds, on the clock: the first, doubled after each add that
// fails, up to the last.
const (
	queueFirstPause = 250 * time.Millisecond
	queueMaxPause   = 5 * time.Second
)

// maxQueuing bounds the events Queue goes on adding at once (one goroutine each, for at
// most QueueWithin): past it, an event the outbox could not take is lost at once.
const maxQueuing = 10_000

// ErrQueuing is matched (errors.Is) by Queue's error when the outbox could not take the
// event yet and Queue goes on adding it.
var ErrQueuing = errors.New("webhook: the outbox cannot take the event now; it is added when the outbox is back")

// settleTimeout bounds an ack or a nak of the outbox.
const settleTimeout = 10 * time.Second

// foreignURLWait is how long an entry for a URL this deliverer does not have waits for
// a deliverer that has it.
const foreignURLWait = time.Minute

// unavailablePause is how long a worker waits, on the clock, after the outbox failed to
// hand out an event (the store is unavailable) before asking again.
const unavailablePause = time.Second

// maxAnswerBody is how much of a receiver's answer is read (and dropped), so that its
// connection can be used again.
const maxAnswerBody = 64 << 10

// Stats count deliveries since the Deliverer started, one per event and URL.
type Stats struct {
	Delivered uint64 // answered 2xx
	Retries   uint64 // failed attempts that will be tried again
	Failures  uint64 // given up: past the Backoff's bound, or an event that cannot be sent
	// Lost counts events (not per URL) that Queue could not add to the outbox within
	// Options.QueueWithin, or before Stop ended its tries: they are never sent.
	Lost uint64
}

// Deliverer sends events, signed by the Standard Webhooks scheme, to a set of URLs,
// through an outbox: Send only adds to the outbox and returns, and Options.Workers
// goroutines take the events from the outbox and POST them, one event at a time each. An
// event goes to each URL as one outbox entry of its own (an entry per event and URL), so
// a receiver that is down delays only its own events, and a retry never repeats a
// delivery another URL has acknowledged.
//
// Every attempt of an event carries the same webhook-id (the event's id) and body, a
// fresh webhook-timestamp and signature. A 2xx answer delivers it; any other answer, a
// redirect, a timeout or a network error fails the attempt, and it is retried after the
// Backoff's wait, until the Backoff gives it up. Delivery is at least once: a receiver
// may get an event again (after a lost answer, or a node that died mid-delivery), never
// with another id, and deduplicates by webhook-id.
//
// With a shared outbox, the deliverers of all nodes share the work: each entry is handed
// to one deliverer at a time, and an entry taken by a node that dies is handed to another
// after the outbox's AckWait.
//
// Its methods are safe for concurrent use.
type Deliverer struct {
	o       Options
	targets []target
	byKey   map[string]target
	sign    *standardwebhooks.Webhook
	client  *http.Client
	own     bool // the client is ours: Stop closes its idle connections
	clk     clock.Clock
	backoff Backoff
	log     *slog.Logger

	pull     context.Context // ends when Stop begins: no more events are taken
	stopPull context.CancelFunc
	work     context.Context // ends when Stop's context does: deliveries are cut short
	stopWork context.CancelFunc
	wg       sync.WaitGroup

	// Queue's tries in the background: queuing ends when Stop gives up waiting for them.
	queuing     context.Context
	stopQueuing context.CancelFunc
	qmu         sync.Mutex
	qstop       bool          // Stop has begun: no more tries in the background
	stopping    chan struct{} // closed when Stop begins: the tries going on make their last ones at once
	back        chan struct{} // closed (and made anew) when an add goes through: the tries going on are made at once
	qwg         sync.WaitGroup
	nqueuing    int // tries going on, under qmu

	delivered, retries, failures, lost atomic.Uint64
}

// target is one receiver: its URL, the key its outbox entries carry, and how logs show it.
type target struct {
	url   *url.URL
	key   string
	shown string // scheme, host and path: a query may hold a token
}

// envelope is an outbox entry: one event for one URL.
type envelope struct {
	ID   string    `json:"id"`   // the event's id: the webhook-id
	URL  string    `json:"url"`  // the key of the target
	Sent time.Time `json:"sent"` // when Send added it: the Backoff's bound runs from here
	Body []byte    `json:"body"` // the event's JSON, exactly as signed and sent
}

// New checks o and starts the deliverer's workers. Its errors name the URL, or the
// setting, that cannot be used; they never quote the secret.
func New(o Options) (*Deliverer, error) {
	if o.Outbox == nil {
		return nil, errors.New("webhook: no outbox")
	}
	if len(o.URLs) == 0 {
		return nil, errors.New("webhook: no URL to send to")
	}
	sign, err := signer(o.Secret)
	if err != nil {
		return nil, err
	}
	d := &Deliverer{o: o, sign: sign, byKey: map[string]target{}, client: o.HTTPClient, clk: o.Clock,
		backoff: o.Backoff.WithDefaults(), log: o.Logger}
	for _, raw := range o.URLs {
		u, err := ParseURL(raw, o.AllowPrivate)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(u.String()))
		t := target{url: u, key: hex.EncodeToString(sum[:6]), shown: u.Scheme + "://" + u.Host + u.EscapedPath()}
		if _, dup := d.byKey[t.key]; dup {
			continue
		}
		d.byKey[t.key] = t
		d.targets = append(d.targets, t)
	}
	if d.client == nil {
		d.client, d.own = Client(o.AllowPrivate), true
	}
	if d.clk == nil {
		d.clk = clock.New()
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.o.Workers <= 0 {
		d.o.Workers = DefaultWorkers
	}
	if d.o.Timeout <= 0 {
		d.o.Timeout = DefaultTimeout
	}
	if d.o.QueueWithin <= 0 {
		d.o.QueueWithin = DefaultQueueWithin
	}
	d.queuing, d.stopQueuing = context.WithCancel(context.Background())
	d.stopping = make(chan struct{})
	d.back = make(chan struct{})
	d.pull, d.stopPull = context.WithCancel(context.Background())
	d.work, d.stopWork = context.WithCancel(context.Background())
	for range d.o.Workers {
		d.wg.Add(1)
		go d.worker()
	}
	return d, nil
}

// Send queues the event of e for every URL and returns once the outbox holds it: it never
// waits for a receiver. It makes the event with NewEvent (answers only with
// Options.Answers, never a sensitive field's). Sending one question's end again is
// harmless: the outbox keeps one entry per event and URL within its dedupe window, so a
// Send that failed with store.ErrUnavailable is simply sent again. Send works after Stop
// too: another node's deliverer, or this one's successor, delivers the event.
func (d *Deliverer) Send(ctx context.Context, e Ending) error {
	b, err := d.entries(e)
	if err != nil {
		return err
	}
	if err := b.add(ctx, d.o.Outbox, d.clk.Now(), false, d.log); err != nil {
		return err
	}
	d.outboxBack()
	return nil
}

// Queue is Send for a caller that must not wait on the store, such as a tool call whose
// question ended: the store may be out for a while (its NATS connection reconnecting, a
// quorum lost), and the event must not be lost for it. Queue adds the event as Send does,
// waiting at most 2 s. If the outbox could not take it (store.ErrUnavailable, or the add
// timed out, its outcome unknown), Queue returns an error matching ErrQueuing and goes on
// adding it in the background, on Options.Clock, a pause after each failure (250 ms,
// doubled up to 5 s; cut short as soon as an add of any other event goes through: the
// outbox is back), until an add succeeds or Options.QueueWithin has passed since the
// call: then the event is lost, logged by its id and counted in Stats.Lost.
//
// Every add is of the same entries under the same ids, so an add that landed though it
// was reported failed leaves one entry: the outbox drops the same id added again within
// its dedupe window (an hour by default, far longer than QueueWithin), and the receiver
// gets one webhook-id. What is still being added lives in this process only: if it dies
// first, the event is lost. Stop has each add going on tried again at once (an entry
// refused as in process under another key straight away: there is no waiting it out),
// waits for them until its context ends, then ends them (their events lost); after Stop,
// Queue adds once, as Send. Any other error is
// returned as Send returns it, and nothing more is tried.
func (d *Deliverer) Queue(e Ending) error {
	b, err := d.entries(e)
	if err != nil {
		return err
	}
	since := d.clk.Now()
	ctx, cancel := context.WithTimeout(context.Background(), queueTry)
	err = b.add(ctx, d.o.Outbox, d.clk.Now(), false, d.log)
	cancel()
	if err == nil {
		d.outboxBack()
	}
	if err == nil || !retryable(err) {
		return err
	}
	d.qmu.Lock()
	later := !d.qstop && d.nqueuing < maxQueuing
	if later {
		d.nqueuing++
		d.qwg.Add(1)
	}
	d.qmu.Unlock()
	if !later {
		d.lost.Add(1)
		return err
	}
	go d.addLater(b, since)
	return fmt.Errorf("%w: %w", ErrQueuing, err)
}

// retryable reports whether an add that failed with err may succeed later: the store was
// unavailable, or the add timed out (it may have landed: adding it again is harmless).
func retryable(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// addLater adds b, a pause after each add that fails, until one succeeds, the bound
// Options.QueueWithin from since has passed, or Stop ends the tries.
func (d *Deliverer) addLater(b *entries, since time.Time) {
	defer func() {
		d.qmu.Lock()
		d.nqueuing--
		d.qmu.Unlock()
		d.qwg.Done()
	}()
	bound := since.Add(d.o.QueueWithin)
	pause := queueFirstPause
	stopping := false
	back := d.backSignal() // Queue's add failed before this was taken: only a later add closes it
	for try := 2; ; try++ {
		left := bound.Sub(d.clk.Now())
		wake := d.stopping // Stop has the next try made at once: the process is about to end
		if stopping {
			wake = nil
		}
		if left <= 0 || !d.pause(d.queuing, min(pause, left), wake, back) {
			d.lost.Add(1)
			d.log.Error("webhook event lost: the outbox could not take it", "id", b.id, "tries", try-1,
				"stopping", d.queuing.Err() != nil)
			return
		}
		select {
		case <-d.stopping:
			stopping = true
		default:
		}
		// Taken before the add: an add of another event that goes through meanwhile ends
		// the next pause at once.
		back = d.backSignal()
		ctx, cancel := context.WithTimeout(d.queuing, queueTry)
		err := b.add(ctx, d.o.Outbox, d.clk.Now(), stopping, d.log)
		cancel()
		switch {
		case err == nil:
			d.outboxBack()
			d.log.Info("webhook event queued once the outbox was back", "id", b.id, "tries", try)
			return
		case !retryable(err) && d.queuing.Err() == nil:
			d.lost.Add(1)
			d.log.Error("webhook event lost: the outbox refused it", "id", b.id, "tries", try, "err", err)
			return
		}
		pause = min(2*pause, queueMaxPause)
	}
}

// backSignal is closed when an add next goes through.
func (d *Deliverer) backSignal() <-chan struct{} {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	return d.back
}

// outboxBack tells the events being added in the background that an add went through: the
// outbox is back, and each tries at once rather than at the end of its pause (up to
// queueMaxPause), so that a node that dies a moment after the store came back has not
// lost the events it held.
func (d *Deliverer) outboxBack() {
	d.qmu.Lock()
	defer d.qmu.Unlock()
	if d.nqueuing > 0 {
		close(d.back)
		d.back = make(chan struct{})
	}
}

// pause waits for wait on the clock; false if ctx ended first. wake or back, when closed
// (a nil one never is), cuts the wait short, as the wait's end does.
func (d *Deliverer) pause(ctx context.Context, wait time.Duration, wake, back <-chan struct{}) bool {
	// A function timer that signals without blocking: a mock clock moved by two goroutines
	// at once can fire a timer twice, and a channel timer's second send would hang the
	// clock.
	again := make(chan struct{}, 1)
	t := d.clk.AfterFunc(wait, func() {
		select {
		case again <- struct{}{}:
		default:
		}
	})
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-wake:
		t.Stop()
		return true
	case <-back:
		t.Stop()
		return true
	case <-again:
		return true
	}
}

// entries are the outbox entries of one event, one per URL, and which of them are added.
type entries struct {
	id    string   // the event's
	keys  []string // each entry's first key (key)
	shown []string
	data  [][]byte
	added []bool
	// stuck is when the outbox began refusing an entry's adds as in process
	// (store.ErrInProcess), zero while it does not; gen is how many times the entry was
	// given another key for it since (key).
	stuck []time.Time
	gen   []int
}

// stuckInProcess is how long an entry's adds may be refused as in process before it is
// added under another key. A publish really in process is stored or dropped within
// seconds; one refused for longer was lost by a NATS stream leader that lost its quorum,
// which keeps refusing its id until its dedupe window ends (an hour by default).
const stuckInProcess = 30 * time.Second

// entries makes the outbox entries of e's event.
func (d *Deliverer) entries(e Ending) (*entries, error) {
	ev, err := NewEvent(e, d.o.Answers)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("webhook: event %s does not encode: %w", ev.ID, err)
	}
	sent := d.clk.Now()
	b := &entries{id: ev.ID, added: make([]bool, len(d.targets)), stuck: make([]time.Time, len(d.targets)),
		gen: make([]int, len(d.targets))}
	for _, t := range d.targets {
		entry, err := json.Marshal(envelope{ID: ev.ID, URL: t.key, Sent: sent, Body: body})
		if err != nil {
			return nil, fmt.Errorf("webhook: event %s does not encode: %w", ev.ID, err)
		}
		b.keys = append(b.keys, ev.ID+"."+t.key)
		b.shown = append(b.shown, t.shown)
		b.data = append(b.data, entry)
	}
	return b, nil
}

// add adds the entries of b not added yet to ob, at now on the deliverer's clock. An
// entry refused as in process for stuckInProcess is given another key for its next add;
// in a hurry (the deliverer stops: there is no waiting it out), at once, and added again.
func (b *entries) add(ctx context.Context, ob store.Outbox, now time.Time, hurry bool, log *slog.Logger) error {
	var errs []error
	for i := range b.keys {
		if b.added[i] {
			continue
		}
		err := ob.Add(ctx, b.key(i), b.data[i])
		if err != nil && hurry && errors.Is(err, store.ErrInProcess) {
			b.gen[i]++
			b.stuck[i] = time.Time{}
			log.Warn("a webhook event's outbox entry was refused as in process as the node stops; it is added under another key",
				"id", b.id, "entry", b.key(i))
			err = ob.Add(ctx, b.key(i), b.data[i])
		}
		switch {
		case err == nil:
			b.added[i] = true
			continue
		case !errors.Is(err, store.ErrInProcess):
			b.stuck[i] = time.Time{}
		case b.stuck[i].IsZero():
			b.stuck[i] = now
		case now.Sub(b.stuck[i]) >= stuckInProcess:
			b.gen[i]++
			b.stuck[i] = time.Time{}
			log.Warn("a webhook event's outbox entry was refused as in process for too long; it is added under another key",
				"id", b.id, "entry", b.key(i))
		}
		errs = append(errs, fmt.Errorf("webhook: queue event %s for %s: %w", b.id, b.shown[i], err))
	}
	return errors.Join(errs...)
}

// key is entry i's outbox id: its first key, or, once it was refused as in process for too
// long, that key with a generation after it (".2", ".3"): the same event, for the same URL,
// under an id the outbox has not seen. Should the add that was refused be stored after all,
// the URL gets the event twice, with one webhook-id, which a receiver deduplicates
// (delivery is at least once).
func (b *entries) key(i int) string {
	if b.gen[i] == 0 {
		return b.keys[i]
	}
	return b.keys[i] + "." + strconv.Itoa(b.gen[i]+1)
}

// Backlog returns the outbox's entries not yet delivered (one per event and URL; see
// store.OutboxLen); ok is false when the outbox cannot tell.
func (d *Deliverer) Backlog(ctx context.Context) (n int, ok bool, err error) {
	ol, ok := d.o.Outbox.(store.OutboxLen)
	if !ok {
		return 0, false, nil
	}
	n, err = ol.Len(ctx)
	return n, true, err
}

// Stats returns the counts so far.
func (d *Deliverer) Stats() Stats {
	return Stats{Delivered: d.delivered.Load(), Retries: d.retries.Load(), Failures: d.failures.Load(), Lost: d.lost.Load()}
}

// Stop stops taking events and waits for the deliveries under way to end, and for the
// events Queue is still adding, until ctx ends; then it cuts the deliveries short, hands
// their events back to the outbox at once (for another node, or the next start), ends
// Queue's tries (their events are lost), and waits for its goroutines to return (each
// worker's Outbox.Next: a NATS outbox's waits for its pull to end, a second at most). It
// returns ctx's error if it had to cut something short. Events in the outbox stay there.
// Calling Stop again waits again.
func (d *Deliverer) Stop(ctx context.Context) error {
	d.stopPull()
	d.qmu.Lock()
	if !d.qstop {
		d.qstop = true
		close(d.stopping)
	}
	d.qmu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		d.qwg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		d.stopWork()
		d.stopQueuing()
		<-done
	}
	d.stopWork()
	d.stopQueuing()
	if d.own {
		d.client.CloseIdleConnections()
	}
	return err
}

// worker delivers one event after another until Stop.
func (d *Deliverer) worker() {
	defer d.wg.Done()
	for {
		dl, err := d.o.Outbox.Next(d.pull)
		if err != nil {
			if d.pull.Err() != nil {
				return
			}
			d.log.Warn("webhook outbox unavailable; trying again", "err", err)
			if !d.pause(d.pull, unavailablePause, nil, nil) {
				return
			}
			continue
		}
		d.deliver(dl)
	}
}

// deliver makes one attempt of one outbox entry and settles it.
func (d *Deliverer) deliver(dl store.Delivery) {
	var env envelope
	if err := json.Unmarshal(dl.Payload(), &env); err != nil || env.ID == "" {
		d.failures.Add(1)
		d.settle(dl, "ack", dl.Ack)
		d.log.Error("webhook outbox entry cannot be read; dropped", "entry", dl.ID())
		return
	}
	t, ok := d.byKey[env.URL]
	if !ok {
		// Queued by a node given a URL this one is not (nodes deployed one by one with
		// another --webhook list): handed back for a node that has it, until the event's
		// bound; not an attempt.
		if !d.clk.Now().Add(foreignURLWait).After(env.Sent.Add(d.backoff.GiveUpAfter)) {
			d.settle(dl, "nak", func(ctx context.Context) error { return dl.Nak(ctx, foreignURLWait) })
			return
		}
		d.failures.Add(1)
		d.settle(dl, "ack", dl.Ack)
		d.log.Warn("webhook event for a URL no node has had for its whole delivery time; given up", "id", env.ID, "entry", dl.ID())
		return
	}
	err := d.post(t, env)
	if err == nil {
		d.delivered.Add(1)
		d.settle(dl, "ack", dl.Ack)
		return
	}
	if d.work.Err() != nil { // cut short by Stop: not an attempt; someone else goes on
		d.settle(dl, "nak", func(ctx context.Context) error { return dl.Nak(ctx, 0) })
		return
	}
	wait, again := d.backoff.Next(dl.Attempt(), env.Sent, d.clk.Now())
	if !again {
		d.failures.Add(1)
		d.settle(dl, "ack", dl.Ack)
		d.log.Warn("webhook given up", "id", env.ID, "url", t.shown, "attempts", dl.Attempt(), "err", err)
		return
	}
	d.retries.Add(1)
	d.settle(dl, "nak", func(ctx context.Context) error { return dl.Nak(ctx, wait) })
	d.log.Info("webhook attempt failed; retrying", "id", env.ID, "url", t.shown, "attempt", dl.Attempt(), "wait", wait, "err", err)
}

// settle acks or naks dl. A failure is logged and otherwise left to the outbox: an entry
// not settled is handed out again after its AckWait.
func (d *Deliverer) settle(dl store.Delivery, what string, f func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := f(ctx); err != nil {
		d.log.Warn("webhook outbox "+what+" failed; the entry comes back after the outbox's AckWait", "entry", dl.ID(), "err", err)
	}
}

// StatusError is an attempt whose receiver answered with a status other than 2xx.
type StatusError struct{ Code int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("the receiver answered %d %s", e.Code, http.StatusText(e.Code))
}

// post sends env to t once, signed now.
func (d *Deliverer) post(t target, env envelope) error {
	ctx, cancel := context.WithTimeout(d.work, d.o.Timeout)
	defer cancel()
	now := d.clk.Now()
	sig, err := d.sign.Sign(env.ID, now, env.Body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url.String(), bytes.NewReader(env.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "elicitd-webhooks")
	req.Header.Set(standardwebhooks.HeaderWebhookID, env.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err // without the URL, whose query may hold a token
		}
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBody))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &StatusError{Code: resp.StatusCode}
	}
	return nil
}
