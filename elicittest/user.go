package elicittest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/validator"
)

// Era is the protocol version a simulated client speaks.
type Era string

// The two eras of MCP elicitation.
const (
	Push Era = "2025-11-25" // the server sends elicitation/create while the call waits
	Pull Era = "2026-07-28" // the call returns input_required; the client calls again
)

// Eras lists both, for table tests.
var Eras = []Era{Pull, Push}

// Step is what the simulated person does with one prompt.
type Step struct {
	action  string
	content map[string]any
	before  func(*mcp.ElicitParams)
	open    func(url string) // for OnPage
}

// Before is step s taken after f has run with the prompt: a person who takes their time
// (f advances the test's mock clock), or an agent that acts meanwhile (f extends the
// question). f runs on the client's goroutine that answers the prompt.
func Before(f func(*mcp.ElicitParams), s Step) Step {
	s.before = f
	return s
}

// Accept submits the form with content (sent as is: the server normalises and checks it).
func Accept(content map[string]any) Step { return Step{action: "accept", content: content} }

// Decline declines to answer.
func Decline() Step { return Step{action: "decline"} }

// Cancel dismisses the prompt without choosing.
func Cancel() Step { return Step{action: "cancel"} }

// OnPage is what the person does with a URL prompt, a link to elicitd's page (package
// page), where secrets and files are asked: open opens the link, fills in the page and
// sends it (with a pagetest.Browser, say), and then the person accepts the prompt. The
// script fails the test if the prompt is not a URL prompt. The client must declare URL
// elicitation: connect it with ConnectURL.
func OnPage(open func(url string)) Step { return Step{action: "accept", open: open} }

// Never leaves the prompt unanswered until its request's context ends or the client
// vanishes (User.Vanish): in the push era the context ends when the question ends on the
// server (deadline, cancel); in the pull era when the test cancels the call's context (the
// client gives up), since nothing tells a pull-era client that a question ended.
func Never() Step { return Step{action: "never"} }

// User is a simulated person behind an in-memory MCP client connected to a server.
type User struct {
	t       testing.TB
	era     Era
	Session *mcp.ClientSession

	wire     *wire
	gone     chan struct{} // closed by Vanish
	vanished sync.Once

	mu      sync.Mutex
	script  []Step
	prompts []*mcp.ElicitParams
}

// Connect connects a client speaking era to server over in-memory transports; the person
// answers the prompts it gets with script, in order, and the test fails if a prompt comes
// when the script is spent. Answers reach the server as the person gave them: unlike the
// go-sdk client, this one does not check them against the schema first (hosts pass on what
// was typed, "nine" for a number included), so the server's own checks are what is tested.
// The connection is closed when the test ends.
func Connect(t testing.TB, server *mcp.Server, era Era, script ...Step) *User {
	t.Helper()
	return connectScripted(t, server, era, nil, script)
}

// ConnectURL is Connect for a client that declares URL elicitation beside forms: a question
// with fields only elicitd's page may ask (secrets, files) sends it a link, which an
// OnPage step opens.
func ConnectURL(t testing.TB, server *mcp.Server, era Era, script ...Step) *User {
	t.Helper()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
		Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
	return connectScripted(t, server, era, caps, script)
}

// connectScripted connects a client that answers with script, declaring caps (nil: form
// elicitation, inferred from its handler).
func connectScripted(t testing.TB, server *mcp.Server, era Era, caps *mcp.ClientCapabilities, script []Step) *User {
	t.Helper()
	u := &User{t: t, script: script, era: era, gone: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "elicittest", Version: "1"}, &mcp.ClientOptions{
		// Declares form elicitation; the middleware answers before it is reached.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("elicittest: unreachable")
		},
		Capabilities:   caps,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // Call plays the rounds
	})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "elicitation/create" {
				return next(ctx, method, req)
			}
			return u.elicit(ctx, req.GetParams().(*mcp.ElicitParams))
		}
	})
	return u.connect(server, client)
}

// ConnectNoForms connects a client that declares no elicitation support at all.
func ConnectNoForms(t testing.TB, server *mcp.Server, era Era) *User {
	t.Helper()
	u := &User{t: t, era: era, gone: make(chan struct{})}
	return u.connect(server, mcp.NewClient(&mcp.Implementation{Name: "elicittest", Version: "1"}, nil))
}

func (u *User) connect(server *mcp.Server, client *mcp.Client) *User {
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		u.t.Fatalf("elicittest: server connect: %v", err)
	}
	u.wire = &wire{Transport: ct}
	cs, err := client.Connect(ctx, u.wire, &mcp.ClientSessionOptions{ProtocolVersion: string(u.era)})
	if err != nil {
		u.t.Fatalf("elicittest: client connect: %v", err)
	}
	u.Session = cs
	u.t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return u
}

func (u *User) elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	u.prompts = append(u.prompts, params)
	if len(u.script) == 0 {
		u.mu.Unlock()
		u.t.Errorf("elicittest: prompt %d came after the script was spent: %s", len(u.prompts), params.Message)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	step := u.script[0]
	u.script = u.script[1:]
	u.mu.Unlock()
	if step.before != nil {
		step.before(params)
	}
	if step.open != nil {
		if params.Mode != "url" {
			u.t.Errorf("elicittest: prompt %d is a %q prompt, where the script opens a page: %s", len(u.Prompts()), params.Mode, params.Message)
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		step.open(params.URL)
	}
	if step.action == "never" {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-u.gone:
			return nil, errors.New("elicittest: the client vanished")
		}
	}
	return &mcp.ElicitResult{Action: step.action, Content: step.content}, nil
}

// Vanish is the client going away mid-question, as a killed host does: its end of the
// connection closes at once, with no goodbye, and a Never step still waiting gives up.
func (u *User) Vanish() error {
	// The connection first: a killed host sends nothing more, so the Never step must not
	// get the chance to send an error reply for its prompt.
	err := u.wire.conn.Close()
	u.vanished.Do(func() { close(u.gone) })
	return err
}

// wire keeps the client's connection, so Vanish can cut it.
type wire struct {
	mcp.Transport
	conn mcp.Connection
}

func (w *wire) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	w.conn = c
	return c, err
}

// Prompts returns the prompts received so far, in order.
func (u *User) Prompts() []*mcp.ElicitParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.prompts)
}

// Left returns how many steps of the script are unused.
func (u *User) Left() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.script)
}

// Call calls tool with args to its end and returns its result: in the pull era it answers
// each round's input requests and calls again with the requestState, as a client does. A
// protocol error fails the test.
func (u *User) Call(ctx context.Context, tool string, args any) *mcp.CallToolResult {
	u.t.Helper()
	res, err := u.CallErr(ctx, tool, args)
	if err != nil {
		u.t.Fatalf("elicittest: calling %s: %v", tool, err)
	}
	return res
}

// CallErr is Call returning a protocol error (or the context's, when a Never step or the
// caller gave up) instead of failing the test.
func (u *User) CallErr(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	for {
		res, err := u.Session.CallTool(ctx, params)
		if err != nil || len(res.InputRequests) == 0 {
			return res, err
		}
		responses := mcp.InputResponseMap{}
		for key, ir := range res.InputRequests {
			ep, ok := ir.(*mcp.ElicitParams)
			if !ok {
				return nil, fmt.Errorf("elicittest: input request %q is a %T, not an elicitation", key, ir)
			}
			answer, err := u.elicit(ctx, ep)
			if err != nil {
				return nil, err
			}
			responses[key] = answer
		}
		params = &mcp.CallToolParams{Name: tool, Arguments: args, RequestState: res.RequestState, InputResponses: responses}
	}
}

// Payload decodes a tool result's structured content (the JSON text when there is none).
func Payload(res *mcp.CallToolResult) (map[string]any, error) {
	var raw []byte
	switch sc := res.StructuredContent.(type) {
	case nil:
		if len(res.Content) == 0 {
			return nil, fmt.Errorf("elicittest: the result has no content")
		}
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok {
			return nil, fmt.Errorf("elicittest: the result's content is a %T, not text", res.Content[0])
		}
		raw = []byte(tc.Text)
	case json.RawMessage:
		raw = sc
	default:
		var err error
		if raw, err = json.Marshal(sc); err != nil {
			return nil, err
		}
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("elicittest: the result is not a JSON object: %w", err)
	}
	return out, nil
}

// FieldErrors returns the field errors of an error payload (its "errors").
func FieldErrors(res *mcp.CallToolResult) []validator.FieldError {
	p, err := Payload(res)
	if err != nil {
		return nil
	}
	raw, _ := json.Marshal(p["errors"])
	var errs []validator.FieldError
	_ = json.Unmarshal(raw, &errs)
	return errs
}

// AssertFieldError reports whether errs has an error for field with constraint, and fails
// the test, listing what errs has, if not.
func AssertFieldError(t testing.TB, errs []validator.FieldError, field, constraint string) bool {
	t.Helper()
	for _, e := range errs {
		if e.Field == field && e.Constraint == constraint {
			return true
		}
	}
	t.Errorf("elicittest: no %q error on field %q; the errors are %v", constraint, field, errs)
	return false
}

// AssertOnlyFieldError reports whether errs is exactly one error, on field, for constraint.
func AssertOnlyFieldError(t testing.TB, errs []validator.FieldError, field, constraint string) bool {
	t.Helper()
	if len(errs) != 1 {
		t.Errorf("elicittest: want one %q error on field %q, got %d: %v", constraint, field, len(errs), errs)
		return false
	}
	return AssertFieldError(t, errs, field, constraint)
}
