package ask

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/page"
	"github.com/elicitd/elicitd/registry"
	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/timers"
	"github.com/elicitd/elicitd/validator"
)

// PullEra is the first protocol version whose clients answer elicitations through multi
// round-trip tool calls; earlier sessions get server-initiated elicitation/create requests.
// Over Streamable HTTP its clients are served statelessly.
const PullEra = "2026-07-28"

// Options configure an Elicitor. Zero values take the defaults noted.
type Options struct {
	Clock   clock.Clock   // the real clock
	Timeout time.Duration // per question, and the most a question may ask for; 10m
	// MaxAttempts bounds the attempts at a valid answer per question: the first prompt is
	// attempt 1, each invalid answer earns the next, and an invalid answer to the last
	// ends the question with ELICITATION_MAX_RETRIES. A follow-up round (conditional
	// fields, a Then's FollowUp, the page) is not an attempt. It is also the most a
	// question may ask for. 0: elicitation.DefaultMaxAttempts (3).
	MaxAttempts int
	// MaxRounds bounds the rounds (prompts) one question may take, re-prompts and
	// follow-ups included: past it the question ends with ELICITATION_TOO_MANY_ROUNDS, so a
	// Then that keeps asking cannot keep a person answering for ever. 0:
	// elicitation.DefaultMaxRounds (20).
	MaxRounds int
	Rate      rate.Limit // questions an owner may start per second; 0: no limit
	Burst     int        // with Rate
	// MaxLive caps the questions awake across all owners (a goroutine each, about 27 KB:
	// push-era questions, and pull-era ones between a request and their hibernation);
	// MaxAsleep those hibernating (no goroutine, about 2 KB), which a node may hold many
	// more of. A new question is refused (CodeTooMany, too_many_live) when either is
	// reached; 0: no cap.
	MaxLive   int
	MaxAsleep int
	Keepalive time.Duration // push era: progress notifications while waiting, if the call has a token; 0: none
	// PullIdle, when positive, ends a pull-era question as abandoned when the client has
	// not come back with the answer to a round for this long, to free its slot before the
	// deadline. Every time left shown (the prompt's DeadlineKey, list_elicitations) is the
	// earlier of the two, and an extension moves both. 0 or negative: none; a question
	// lives until its deadline unless its client cancels it or goes away.
	PullIdle time.Duration
	StateKey []byte       // the pull-era requestState HMAC key; random when empty
	Logger   *slog.Logger // one line per finished question, never a value typed; discards when nil
	// Owner names who owns a call's questions: only the owner may resume, list or cancel
	// them. Nil, or "" for a call: one owner per client session, whose questions end
	// (client gone) when the session does. Stateless HTTP needs a hook (each request
	// there has a session of its own): the authenticated caller, say.
	Owner func(*mcp.CallToolRequest) string
	// Pages serves elicitd's page, through which fields that must not be asked in form mode
	// (secrets, files) are asked, in URL mode. Nil: such questions get ELICITATION_UNSUPPORTED.
	Pages *page.Server
	// PageWait is how long a pull-era retry that accepted the page's link waits for the page
	// to be submitted before it hands the link back to show again; 0: DefaultPageWait.
	PageWait time.Duration
	// Store keeps the 2026-07-28 calls (durable.go): a retry may then land on any node that
	// shares it, and a restart loses nothing. Nil: calls live in this process only.
	// Several nodes sharing a store must share StateKey too.
	Store store.Store
	// Relay forwards a retry to the node whose goroutine holds its call (durable_forward.go); nil:
	// Store's, if it is a store.Relay too. Without one, a node takes over every call a
	// retry brings it (durable_takeover.go).
	Relay store.Relay
	// PingEvery is how often a retry forwarded to another node (Relay), while it waits
	// for that node's answer, asks the node whether it runs; PingWait is how long such a
	// ping may go unanswered before the node is held to be frozen or cut off (it keeps
	// its NATS connection, so nothing says "no responders") and the call is taken over
	// (durable_takeover.go). A node that only works slowly answers its pings meanwhile, and keeps
	// the call. 0: DefaultPingEvery, DefaultPingWait. Both run on Clock.
	PingEvery, PingWait time.Duration
	// RecordBehind lets a pull-era call's first prompt go out before the store has its
	// record: the write lands while the client asks the person, off the call's critical
	// path (one store round trip a call fewer to wait for). The prompt's requestState then
	// carries, signed, what any node needs to write the record itself if it finds none (the
	// node that asked was killed before its write landed), so a restart still loses
	// nothing, and the requestState is still good for one use. What changes: another node
	// may not list the question for the moment the write takes, and a store that fails
	// lets one question out before new ones are refused. Set it where one node serves each
	// client (elicitd over stdio, or over HTTP on an embedded store no other node can reach).
	// Only replayable tools' form-mode first rounds go behind.
	RecordBehind bool
	// Linger, with RecordBehind, holds a first round's write behind its prompt this long,
	// the call awake meanwhile: a round answered within it (by a client that answers from
	// what it has: a script, a host that fills the form itself) is recorded by one write, the
	// one that records what it returns, and is not hibernated and replayed in between. A node
	// killed within it leaves the round unrecorded, as one whose write was lost: the
	// requestState carries what the retry's node needs to record it (see RecordBehind);
	// Close writes the rounds it holds. Zero (the default) writes at once.
	Linger time.Duration
	// KeepAwake keeps a pull-era call's handler running between its rounds, parked in Ask,
	// as calls without a store do. By default, with a Store, a Replayable tool's call
	// hibernates once a round is handed out and recorded: no goroutine stays, and the next
	// round replays the handler from the record on whichever node it reaches (durable_hibernate.go).
	KeepAwake bool
	// Node names this Elicitor among those sharing Store: 1-64 letters, digits or '-',
	// unique to each running process; random when empty (the usual choice).
	Node string
	// OnEnd, if set, is called once for each question that ends, on the goroutine of the
	// handler that asked it, before Ask returns (a question of a node that is gone: on the
	// node that finds it). It must return promptly: a webhook outbox's Add, say.
	OnEnd func(Ending)
	// OnEndErr is OnEnd for a hook that can tell whether it kept the end where it will not
	// be lost (a webhook event queued in a store): an error says it may be. A 2025-11-25
	// question that a stopping node ended, and whose end it could not keep, is left in the
	// node's roster, for the survivor that sweeps it (or the node started again) to tell
	// again. OnEndErr is used when both are set.
	OnEndErr func(Ending) error
	// MoreStats, if set, adds figures to the stats resource: each key's value, as JSON.
	MoreStats map[string]func() any
}

// Elicitor puts questions to the person behind a tool call, in the era the call speaks.
// It is the only code that sends elicitations over an MCP session. Create it with New.
type Elicitor struct {
	reg         *registry.Registry
	clk         clock.Clock
	signer      stateSigner
	timeout     time.Duration
	maxAttempts int
	maxRounds   int
	keepalive   time.Duration
	pullIdle    time.Duration
	log         *slog.Logger
	ownerOf     func(*mcp.CallToolRequest) string
	pages       *page.Server
	pageWait    time.Duration
	pingEvery   time.Duration // Options.PingEvery
	pingWait    time.Duration // Options.PingWait

	store store.Store
	relay store.Relay
	// recordBehind is Options.RecordBehind; syncFirst, while set, has first rounds recorded
	// before their prompts go out all the same: until a write succeeds (at the start, and
	// after a write behind failed).
	recordBehind bool
	syncFirst    atomic.Bool
	linger       time.Duration           // Options.Linger, with RecordBehind
	held         index[*call, *call]     // calls whose first round's write is held back (linger), each its own key
	hibernate    bool                    // !Options.KeepAwake
	taskSupport  sync.Map                // tool name -> Tool.Tasks
	asleep       index[string, *sleeper] // call id -> *sleeper: the hibernating questions this node holds the timers of
	deadlines    *timers.Set[*sleeper]   // their deadlines, on one clock timer
	node         string                  // this Elicitor's name among those sharing the store
	stopRelay    func()
	stopping     atomic.Bool   // Close has begun
	quit         chan struct{} // closed when Close begins
	quitOnce     sync.Once
	onEnd        func(Ending) error // Options.OnEndErr, or Options.OnEnd
	moreStats    map[string]func() any
	roster       *roster       // with a store and a relay: this node's open 2025-11-25 questions
	swept        atomic.Int64  // questions of dead nodes this node ended
	tally        tally         // what Counts returns
	idPrefix     string        // the node's name and '-': call ids never repeat across restarts
	callSeq      atomic.Uint64 // numbers the pull-era calls

	owners sync.Map  // *mcp.ServerSession -> sessionOwner, for the default owner hook
	calls  callStore // pull era: the calls a client may come back to, and how recent ones ended
	busy   inflight  // tool calls being handled and pull-era handlers still running

	streams   sync.Map      // stream id -> *stream: the POSTs WatchStreams is serving
	streamSeq atomic.Uint64 // names the streams
	watching  atomic.Bool   // WatchStreams names streams: a POST's call without its stream came after it ended

	// listing.go: by server, the tools added with a bare input schema, by name (listedTool),
	// and the one tools/list sends for each.
	listed sync.Map

	mu      sync.Mutex
	answers []time.Duration // recent times to a completed answer, a ring
	next    int
}

// New returns an Elicitor for server and installs its middleware: the wire schema on
// outgoing elicitation/create requests, 2026-07-28 input_required results as the spec has
// them, ask errors returned by handlers as the error payload, and the count of calls that
// Close waits for. Register the tools that ask with AddTool or Handler.
func New(server *mcp.Server, o Options) *Elicitor {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Timeout == 0 {
		o.Timeout = elicitation.DefaultTimeout
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = elicitation.DefaultMaxAttempts
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = elicitation.DefaultMaxRounds
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	key := o.StateKey
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	node := o.Node
	if node == "" {
		node = rand.Text()[:13]
	}
	el := &Elicitor{quit: make(chan struct{}), clk: o.Clock, signer: newStateSigner(key), node: node, idPrefix: node + "-", store: o.Store, relay: o.Relay, timeout: o.Timeout, maxAttempts: o.MaxAttempts,
		maxRounds: o.MaxRounds, keepalive: o.Keepalive, pullIdle: max(o.PullIdle, 0), log: o.Logger, ownerOf: o.Owner, pages: o.Pages, pageWait: cmp.Or(o.PageWait, DefaultPageWait), calls: &memCalls{}, onEnd: onEnd(o), moreStats: o.MoreStats}
	el.recordBehind, el.hibernate = o.RecordBehind, !o.KeepAwake
	if o.RecordBehind {
		el.linger = max(o.Linger, 0)
	}
	el.deadlines = timers.New(o.Clock, (*sleeper).expire)
	el.pingEvery, el.pingWait = cmp.Or(o.PingEvery, DefaultPingEvery), cmp.Or(o.PingWait, DefaultPingWait)
	el.syncFirst.Store(true)
	el.reg = registry.New(registry.Config{Clock: o.Clock, Rate: o.Rate, Burst: o.Burst, MaxLive: o.MaxLive, MaxAsleep: o.MaxAsleep, OnEnd: el.ended})
	el.serveRelay(o.Store)
	server.AddSendingMiddleware(attachWireSchema)
	server.AddReceivingMiddleware(el.middleware)
	return el
}

// onEnd is o's end hook: OnEndErr, else OnEnd (which keeps every end it is told), else nil.
func onEnd(o Options) func(Ending) error {
	switch {
	case o.OnEndErr != nil:
		return o.OnEndErr
	case o.OnEnd != nil:
		return func(e Ending) error { o.OnEnd(e); return nil }
	}
	return nil
}

// Node returns the Elicitor's name among the nodes that share its store.
func (el *Elicitor) Node() string { return el.node }

// Registry returns the registry of the Elicitor's live questions.
func (el *Elicitor) Registry() *registry.Registry { return el.reg }

// Close refuses new questions, ends every open one with reason (elicitation.Shutdown, say), so
// the calls waiting on them return their results, and waits until those calls and every
// pull-era handler have returned, or ctx ends.
func (el *Elicitor) Close(ctx context.Context, reason elicitation.Reason) error {
	el.stopping.Store(true)
	el.quitOnce.Do(func() { close(el.quit) })
	if el.stopRelay != nil {
		el.stopRelay() // retries go to the other nodes from now on
	}
	// The first rounds held back (Options.Linger) are written now, before the node says
	// whether it leaves hibernating questions (asleep): theirs are among them.
	el.hurry(ctx)
	asleep := el.asleep.len() > 0
	if err := el.reg.Close(ctx, reason); err != nil {
		return err
	}
	el.deadlines.Close() // the registry has released every sleeper; none fires from here
	for _, s := range el.asleep.values() {
		if el.asleep.drop(s.call, s) {
			el.tally.moved.Add(1) // its record left for another node
		}
	}
	el.calls.each(func(c *call) { c.kill(reason) })
	var err error
	select {
	case <-el.busy.none():
	case <-ctx.Done():
		err = ctx.Err()
	}
	if el.roster != nil {
		// Once the calls have returned: each push-era question's end has been told, or
		// could not be kept, and is left in the roster (roster.close).
		el.roster.close(asleep)
	}
	return err
}

// middleware counts tool calls for Close, turns an ask error a handler returned into the
// error payload, and encodes input_required results without the null content.
func (el *Elicitor) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		el.busy.begin()
		defer el.busy.end()
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		switch {
		case !ok || r == nil:
		case len(r.InputRequests) > 0:
			res = inputRequired{r}
		case r.IsError:
			var e *Error
			if errors.As(r.GetError(), &e) {
				// In place: the result type the SDK set on r stays.
				p := e.Result()
				r.Content, r.StructuredContent = p.Content, p.StructuredContent
			}
		}
		return res, err
	}
}

// Owner returns the owner of req's questions.
func (el *Elicitor) Owner(req *mcp.CallToolRequest) string {
	if el.ownerOf != nil {
		if id := el.ownerOf(req); id != "" {
			return id
		}
	}
	ss := req.Session
	if v, ok := el.owners.Load(ss); ok {
		return v.(sessionOwner).id
	}
	so := sessionOwner{id: rand.Text()}
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		so.user = req.Extra.TokenInfo.UserID
	}
	v, loaded := el.owners.LoadOrStore(ss, so)
	id := v.(sessionOwner).id
	if !loaded {
		// Ends when the session does, which Close of the server's transport sees to.
		go func() {
			_ = ss.Wait()
			el.reg.CloseOwner(id)
			el.owners.Delete(ss)
		}()
	}
	return id
}

// sessionOwner is the owner the default hook gave a client session, and the authenticated
// user the session's first call came from ("" without authentication).
type sessionOwner struct{ id, user string }

// EndSession ends, as client_gone, the open questions of the client session whose id is id,
// if it was opened by user (the authenticated caller; "" without authentication), and
// returns how many it ended. It is for transports that hear of a session's end before the
// SDK would act on it: over Streamable HTTP the SDK answers a session's DELETE only once the
// session's calls have returned, and a call waiting on a person would hold it for as long
// as the question may wait.
func (el *Elicitor) EndSession(id, user string) int {
	n := 0
	for k, v := range el.owners.Range {
		if so := v.(sessionOwner); k.(*mcp.ServerSession).ID() == id && so.user == user {
			n += el.reg.CloseOwner(so.id)
		}
	}
	return n
}

// answerWindow is how many recent answer times the stats keep.
const answerWindow = 1024

// ended is the registry's OnEnd hook: one log line per question, and answer times.
func (el *Elicitor) ended(_ string, o elicitation.Outcome) {
	d := o.Ended.Sub(o.Created)
	if o.State == elicitation.Completed {
		el.mu.Lock()
		if len(el.answers) < answerWindow {
			el.answers = append(el.answers, d)
		} else {
			el.answers[el.next] = d
			el.next = (el.next + 1) % answerWindow
		}
		el.mu.Unlock()
	}
	if !el.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	// Never the values the person typed: ids, names and counts only.
	el.log.Info("elicitation finished", "id", o.ID, "tool", o.Tool, "state", o.State.String(),
		"reason", o.Reason.String(), "attempts", o.Attempts, "rounds", o.Rounds, "duration", d.Round(time.Millisecond).String())
}

// AnswerPercentiles returns the p50 and p99 of recent times to a completed answer, over n
// answers.
func (el *Elicitor) AnswerPercentiles() (p50, p99 time.Duration, n int) {
	el.mu.Lock()
	ds := slices.Clone(el.answers)
	el.mu.Unlock()
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return at(0.50), at(0.99), len(ds)
}

// Question is one thing a tool asks the person: a form, with the message shown above it.
type Question struct {
	Title   string              // a short name for listings and logs; never an answer value
	Message string              // what is asked and why, shown above the form
	Form    *validator.Compiled // the fields; see validator.Compile and NewForm
	// Then, when set, decides what follows each valid answer: finish, a follow-up round
	// (FollowUp, or a typed form's FollowUp), or an error. It gets every answer so far,
	// each round's merged, and so does the caller at the end (Ask's data, the outcome's
	// Data). A follow-up is not an attempt: only invalid answers use those, and
	// Options.MaxRounds bounds the rounds. It runs on the question's own goroutine.
	Then elicitation.Continuation
	// Wire, when set, is sent and checked in place of Form (a fixture's exact schema, or a
	// form that lets every answer through to Then). By default Form is asked keeping the
	// valid answers: a re-prompt asks only for the fields at fault.
	Wire elicitation.CompiledForm
	// Reprompt, when set, words the message after an invalid answer from its problems and
	// the number of fields asked again (only those at fault: the valid answers are kept).
	// Nil: the problems, a blank line, then Message.
	Reprompt    func(errs []validator.FieldError, asked int) string
	Timeout     time.Duration // 0: the Elicitor's; clamped to [1s, the Elicitor's]
	MaxAttempts int           // attempts (see Options.MaxAttempts); 0: the Elicitor's; clamped to [1, the Elicitor's]
	// Missing is what the error for a client without form elicitation lists; Form's
	// fields when nil.
	Missing []Missing
	// Template names the template Form came from, if any: Options.OnEnd hears it.
	Template string
}

// Ask puts q to the person behind the tool call whose context ctx is (a handler registered
// with AddTool or Elicitor.Handler), waits, and returns the validated answers: every
// round's, merged (conditional fields' and follow-ups' included), or what q.Then made of
// them (Next.Data). When the question does not complete, the error is an *Error: test it
// with errors.Is against ErrDeclined, ErrCancelled, ErrTimeout, ErrMaxAttempts,
// ErrTooManyRounds and ErrUnsupported, or return it from the handler, which sends its
// payload to the client.
func Ask(ctx context.Context, q Question) (map[string]any, error) {
	o, err := Outcome(ctx, q)
	if err != nil {
		return nil, err
	}
	if o.State != elicitation.Completed {
		return nil, OutcomeError(o)
	}
	return o.Data, nil
}

// FollowUp is a follow-up step for a Then to ask (in elicitation.Next.FollowUp): form is asked as a
// Question's Form is, keeping the valid answers of an invalid one. Its answers are merged
// into the question's data, beside the earlier rounds'. It is a new round, not an attempt.
func FollowUp(message string, form *validator.Compiled) *elicitation.Step {
	return &elicitation.Step{Message: message, Form: keepForm{form}}
}

// Outcome is Ask returning the engine's outcome, whatever it was: for tools that report a
// decline as a result rather than an error, or that need the data of an unfinished
// question. The error is an *Error, only for a question that could not be asked.
func Outcome(ctx context.Context, q Question) (elicitation.Outcome, error) {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		return elicitation.Outcome{}, errNotInCall
	}
	return c.el.ask(ctx, c, q)
}

func (el *Elicitor) ask(ctx context.Context, c *call, q Question) (elicitation.Outcome, error) {
	if q.Form == nil && q.Wire == nil {
		return elicitation.Outcome{}, Errorf(CodeInvalidForm, "invalid_spec", "ask: Question.Form is required")
	}
	pl, perr := el.planFor(c, q, clientModes(c.req))
	if perr != nil {
		return elicitation.Outcome{}, perr
	}
	spec := elicitation.Spec{Title: q.Title, Tool: c.req.Params.Name, Message: q.Message, Continue: q.Then,
		Timeout: clamp(q.Timeout, time.Second, el.timeout), MaxAttempts: clamp(q.MaxAttempts, 1, el.maxAttempts),
		MaxRounds: el.maxRounds}
	if q.Reprompt != nil {
		spec.Reprompt = func(errs []validator.FieldError, next elicitation.CompiledForm) string {
			n := 0
			if f, ok := next.(interface{ Asked() int }); ok {
				n = f.Asked()
			}
			return q.Reprompt(errs, n)
		}
	}
	spec.Form = pl.form
	if pl.then != nil {
		spec.Continue = pl.then
	}
	var stop func()
	spec.Prompter, stop = pl.way.prompter(ctx, c, q)
	defer stop()
	if c.pull && el.pullIdle > 0 {
		spec.Idle = el.pullIdle
	}
	c.asks++
	n := c.asks
	if !c.until.IsZero() && c.asks >= c.liveAsk {
		// The question a call taken over was asking keeps the deadline it had (the earlier
		// ones were answered in time).
		spec.Due = c.until
	}
	if c.asks == c.liveAsk {
		spec.Created = c.asked // and its age: zero for a call not resumed
	}
	// The question a replay reaches live goes on under its own id, already counted.
	resumed := c.question != "" && c.asks == c.liveAsk
	var e *elicitation.Elicitation
	var err error
	if resumed {
		e, err = el.reg.Resume(c.owner, c.question, spec)
	}
	if resumed && c.closedAt && errors.Is(err, registry.ErrTaken) {
		// It ended while the call hibernated, and the sleeper that closed its record here
		// has not left the registry yet: it is not asked again (under a new id, until the
		// old deadline); it ends as it did, reported already.
		o := c.closedOutcome(spec) // counted as ended by the sleeper
		c.setHow(o)
		return o, nil
	}
	if !resumed || errors.Is(err, registry.ErrTaken) {
		resumed = false
		e, err = el.reg.Start(c.owner, spec)
	}
	if err != nil {
		c.refused(err)
		return elicitation.Outcome{}, startError(err)
	}
	quiet := resumed && c.closedAt // it ended while the call hibernated, and was reported then
	if quiet && c.closeReason != elicitation.None {
		_ = e.Cancel(c.closeReason) // a timeout needs nothing: its deadline has passed
	}
	kept := true // its end, told (reportEnd)
	if !c.pull && el.roster != nil {
		// Its session dies with this node: the roster lets the survivors end it then.
		el.roster.add(e, spec.Tool, store.OwnerDigest(c.owner), el.clk.Now())
		defer func() { el.roster.remove(e.ID(), kept) }()
	}
	// Open on this node (tally) from here, unless it was already: asleep here, or ended
	// while it hibernated (counted then, where it slept).
	counted := !quiet
	if counted && (!resumed || !c.heldHere) {
		el.tally.start(spec.Tool, c.pull)
	}
	o := el.wait(ctx, c, e)
	if c.pull && c.asleep() {
		// The call hibernated: the question goes on, in its record.
		return elicitation.Outcome{}, errHibernated
	}
	if counted {
		el.tally.end(spec.Tool, c.pull, o)
	}
	if c.pull {
		c.setHow(o)
	}
	if !quiet {
		kept = el.reportEnd(c, q, e, n, o)
	}
	return o, nil
}

// refused notes that c's next question was refused with err (by Start, or Admits): one
// refused because this node is stopping counts as a question it ended, so the call is not
// over (leftOpen), and its client hears SERVER_STOPPING rather than shutdown.
func (c *call) refused(err error) {
	if c.pull && errors.Is(err, registry.ErrClosed) {
		c.setHow(elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.Shutdown})
	}
}

// errNotInCall is Ask's error outside a tool handler.
var errNotInCall = Errorf(CodeFailed, "not_in_a_call",
	"ask: the context is not that of a tool handler registered with ask.AddTool, Elicitor.Add or Elicitor.Handler")

// pushContext is the context of a question's push-era prompts. A prompt's
// elicitation/create lives until the question ends, which it has when ask returns (wait sees
// to that); then the SDK tells the client with notifications/cancelled. It keeps the call's
// values: over Streamable HTTP they say which response stream the request goes out on, the
// call's own.
func pushContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.WithoutCancel(ctx))
}

// wait waits for e's outcome. If ctx ends first, e is cancelled for the reason ctx gives. In
// the push era it sends keepalive progress if the call carried a progress token.
func (el *Elicitor) wait(ctx context.Context, c *call, e *elicitation.Elicitation) elicitation.Outcome {
	var tick <-chan time.Time
	token := c.req.Params.GetProgressToken()
	if !c.pull && token != nil && el.keepalive > 0 {
		t := el.clk.Ticker(el.keepalive)
		defer t.Stop()
		tick = t.C
	}
	for n := 1; ; n++ {
		select {
		case <-e.Done():
			o, _ := e.Outcome()
			return o
		case <-ctx.Done():
			_ = e.Cancel(reasonOf(ctx))
			<-e.Done()
			o, _ := e.Outcome()
			return o
		case <-tick:
			s := e.Snapshot()
			_ = c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: float64(n),
				Message: fmt.Sprintf("waiting for the user (attempt %d of %d)", s.Attempt, s.MaxAttempts),
			})
		}
	}
}

// rounds asks a form with conditional fields: after each valid answer, the fields whose
// condition now holds are asked in a follow-up round that keeps every answer so far; once
// none is left, then (if set) decides what follows, for this and every later answer (the
// rounds of then's own follow-ups).
func rounds(form *validator.Compiled, message string, then elicitation.Continuation, forms bool) elicitation.Continuation {
	cur := form // owned by the question's goroutine, which runs every call; nil once done
	return func(data map[string]any) elicitation.Next {
		if cur != nil {
			if next := cur.Next(data); next != nil {
				cur = next
				return elicitation.Next{FollowUp: &elicitation.Step{Message: message, Form: asked(next, forms)}}
			}
			cur = nil
		}
		if then != nil {
			return then(data)
		}
		return elicitation.Next{Data: data}
	}
}

// HintsKey is the _meta key of a prompt's rendering hints: an object from field name to
// {"placeholder": ..., "widget": "multiline" | "password"}, for clients that can use them.
const HintsKey = "io.elicitd/hints"

// hinted is a form with rendering hints (validator.Compiled has them).
type hinted interface {
	Hints() map[string]map[string]string
}

func elicitParams(pr elicitation.Prompt) *mcp.ElicitParams {
	p := &mcp.ElicitParams{Mode: "form", Message: pr.Message, RequestedSchema: pr.Form.WireSchema(),
		Meta: mcp.Meta{DeadlineKey: pr.Elicitation.Snapshot().Deadline.UTC().Format(time.RFC3339Nano)}}
	if h, ok := pr.Form.(hinted); ok {
		if hints := h.Hints(); hints != nil {
			p.Meta[HintsKey] = hints
		}
	}
	return p
}

// DeadlineKey is the _meta key of the time a prompt's question ends unless it is answered
// (RFC 3339, UTC) as it stood when the prompt was sent: a pull-era client cannot hear that
// a question ended, so it can close its form then and tell the person, rather than let them
// fill in a form nobody waits for any more. (An agent may extend a question; a client that
// closes at the deadline should allow a little slack.)
const DeadlineKey = "io.elicitd/deadline"

// modes are the elicitation modes a client declares.
type modes struct{ form, url bool }

// clientModes returns the elicitation modes the client behind req declares. A pull-era
// request carries the client's capabilities in its _meta, decoded from JSON into plain maps;
// they are read there as they are, because req.ClientCapabilities re-encodes and decodes the
// whole capabilities object on every call (measured in BenchmarkRoundTrip: 17 µs and 32 KiB
// of garbage a call, most of the garbage elicitd added to a bare server's). Anything else (no
// _meta entry, a shape the maps do not settle) goes through req.ClientCapabilities.
func clientModes(req *mcp.CallToolRequest) modes {
	if caps, ok := req.Params.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		switch ecap := caps["elicitation"].(type) {
		case nil:
			return modes{}
		case map[string]any:
			form, url := ecap["form"], ecap["url"]
			if objectOrNil(form) && objectOrNil(url) {
				return modes{form: form != nil || url == nil, url: url != nil} // {} counts as form
			}
		}
	}
	return modesOf(req.ClientCapabilities())
}

func objectOrNil(v any) bool {
	_, obj := v.(map[string]any)
	return obj || v == nil
}

func modesOf(caps *mcp.ClientCapabilities) modes {
	if caps == nil || caps.Elicitation == nil {
		return modes{}
	}
	e := caps.Elicitation
	return modes{form: e.Form != nil || e.URL == nil, url: e.URL != nil} // {} counts as form
}

func clamp[T int | time.Duration](v, lo, hi T) T {
	if v == 0 {
		return hi
	}
	return min(max(v, lo), hi)
}

func formMissing(f *validator.Compiled) []Missing {
	if f == nil {
		return nil
	}
	return missingOf(f.Fields())
}

// missingOf lists fields as Missing, each prompted by its label (its name when it has none).
func missingOf(fields []validator.Field) []Missing {
	var out []Missing
	for _, fd := range fields {
		prompt := fd.Label
		if prompt == "" {
			prompt = fd.Name
		}
		out = append(out, Missing{DotPath: fd.Name, FlatKey: fd.Name, Prompt: prompt})
	}
	return out
}

func startError(err error) *Error {
	var rl *registry.RateLimitError
	var se *elicitation.SpecError
	switch {
	case errors.As(err, &rl):
		e := Errorf(CodeRateLimited, "rate_limited", "too many questions were started from this session; retry after %s", rl.RetryAfter)
		e.Details = map[string]any{"retry_after_seconds": rl.RetryAfter.Seconds()}
		return e
	case errors.Is(err, registry.ErrTooManyLive):
		return Errorf(CodeTooMany, "too_many_live", "the server is waiting on too many answers already; retry later")
	case errors.Is(err, registry.ErrClosed):
		return Errorf(CodeCancelled, elicitation.Shutdown.String(), "the server is shutting down")
	case errors.As(err, &se):
		return Errorf(CodeInvalidForm, "invalid_spec", "%s", se.Error())
	}
	return Errorf(CodeFailed, "start_failed", "%s", err.Error())
}
