package ask_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/validator"
)

// Booking is a typed form with most of what a form can say.
type Booking struct {
	Name    string    `json:"name" label:"Name" form:"required,minlen=2"`
	Guests  int       `json:"guests" label:"Guests" form:"required,min=1,max=8"`
	Room    string    `json:"room" label:"Room" options:"single=Single;double=Double" form:"required"`
	Extras  []string  `json:"extras" label:"Extras" options:"breakfast;parking"`
	CheckIn time.Time `json:"check_in" label:"Check-in" form:"required,format=date"`
	Company *string   `json:"company" label:"Company"`
	VAT     string    `json:"vat" label:"VAT number" when:"company" form:"required"`
	Notes   string    `json:"notes" label:"Notes" form:"multiline" placeholder:"anything else"`
}

var bookingForm = ask.MustForm[Booking]("Booking")

type bookOut struct {
	Booking Booking `json:"booking"`
}

// newServer is a custom MCP server with one typed tool that asks, as an outside author
// would write it, on the mock clock.
func newServer(t *testing.T, clk clock.Clock) (*mcp.Server, *ask.Elicitor, chan error) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	el := ask.New(server, ask.Options{Clock: clk, Timeout: time.Minute, PullIdle: -1})
	t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
	errs := make(chan error, 8)
	ask.AddTool(el, server, &mcp.Tool{Name: "book"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, bookOut, error) {
		b, err := bookingForm.Ask(ctx, "Book a room")
		errs <- err
		return nil, bookOut{Booking: b}, err
	})
	return server, el, errs
}

func properties(t *testing.T, p *mcp.ElicitParams) []string {
	t.Helper()
	raw, err := json.Marshal(p.RequestedSchema)
	require.NoError(t, err)
	var s struct {
		Properties map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &s))
	var names []string
	for n := range s.Properties {
		names = append(names, n)
	}
	return names
}

func TestTypedFormAsksKeepsAndFollowsUpInBothEras(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server, _, errs := newServer(t, clock.New())
			u := elicittest.Connect(t, server, era,
				elicittest.Accept(map[string]any{"name": "Ada", "guests": "nine", "room": "DOUBLE", "check_in": "2026-12-01",
					"company": "ACME", "extras": []any{"Parking"}}),
				elicittest.Accept(map[string]any{"guests": " 3 "}),
				elicittest.Accept(map[string]any{"vat": "DE123"}))
			res := u.Call(context.Background(), "book", map[string]any{})
			require.False(t, res.IsError, "%+v", res.Content)
			require.NoError(t, <-errs)
			var out bookOut
			raw, _ := json.Marshal(res.StructuredContent)
			require.NoError(t, json.Unmarshal(raw, &out))
			company := "ACME"
			assert.Equal(t, Booking{Name: "Ada", Guests: 3, Room: "double", Extras: []string{"parking"},
				CheckIn: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Company: &company, VAT: "DE123"}, out.Booking)

			prompts := u.Prompts()
			require.Len(t, prompts, 3)
			assert.ElementsMatch(t, []string{"name", "guests", "room", "extras", "check_in", "company", "notes"}, properties(t, prompts[0]),
				"the VAT number waits until the company is known")
			assert.Equal(t, map[string]any{"notes": map[string]any{"widget": "multiline", "placeholder": "anything else"}},
				prompts[0].Meta[ask.HintsKey], "hints travel in _meta")
			assert.Equal(t, []string{"guests"}, properties(t, prompts[1]), "the re-prompt asks only the field at fault")
			assert.Contains(t, prompts[1].Message, "Guests: must be a whole number")
			assert.Equal(t, []string{"vat"}, properties(t, prompts[2]), "a follow-up round for the conditional field")
		})
	}
}

func TestOutcomesAreTypedErrorsAndPayloads(t *testing.T) {
	bad := map[string]any{"name": "A", "guests": 99, "room": "suite", "check_in": "soon"}
	for _, c := range []struct {
		name   string
		script []elicittest.Step
		is     error
		code   string
	}{
		{"declined", []elicittest.Step{elicittest.Decline()}, ask.ErrDeclined, ask.CodeDeclined},
		{"cancelled", []elicittest.Step{elicittest.Cancel()}, ask.ErrCancelled, ask.CodeCancelled},
		{"too many attempts", []elicittest.Step{elicittest.Accept(bad), elicittest.Accept(bad), elicittest.Accept(bad)}, ask.ErrMaxAttempts, ask.CodeMaxRetries},
	} {
		for _, era := range elicittest.Eras {
			t.Run(c.name+"/"+string(era), func(t *testing.T) {
				server, _, errs := newServer(t, clock.New())
				u := elicittest.Connect(t, server, era, c.script...)
				res := u.Call(context.Background(), "book", map[string]any{})
				require.ErrorIs(t, <-errs, c.is)
				require.True(t, res.IsError)
				p, err := elicittest.Payload(res)
				require.NoError(t, err)
				assert.Equal(t, c.code, p["code"], "the error payload, not the error's text")
				if c.is == ask.ErrMaxAttempts {
					errs := elicittest.FieldErrors(res)
					elicittest.AssertFieldError(t, errs, "room", "option")
					elicittest.AssertFieldError(t, errs, "check_in", "format")
				}
				assert.Zero(t, u.Left())
			})
		}
	}
	for _, era := range elicittest.Eras {
		t.Run("unsupported/"+string(era), func(t *testing.T) {
			server, _, errs := newServer(t, clock.New())
			u := elicittest.ConnectNoForms(t, server, era)
			res := u.Call(context.Background(), "book", map[string]any{})
			require.ErrorIs(t, <-errs, ask.ErrUnsupported)
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, ask.CodeUnsupported, p["code"])
			assert.Len(t, p["missing"], 8, "every field of the form is named")
		})
	}
}

// The deadline runs on the injected clock in both eras.
func TestDeadlineOnTheMockClock(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			mock := clock.NewMock()
			server, el, errs := newServer(t, mock)
			u := elicittest.Connect(t, server, era, elicittest.Never())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, _ := u.CallErr(ctx, "book", map[string]any{})
				done <- res
			}()
			require.Eventually(t, func() bool { return len(u.Prompts()) == 1 }, failsafeBound, time.Millisecond)
			mock.Add(time.Minute)
			require.ErrorIs(t, <-errs, ask.ErrTimeout)
			if era == elicittest.Pull {
				cancel() // nothing tells a pull-era client: it gives up
			}
			res := <-done
			if era == elicittest.Push {
				p, err := elicittest.Payload(res)
				require.NoError(t, err)
				assert.Equal(t, ask.CodeTimeout, p["code"])
			}
			assert.Zero(t, el.Registry().Len())
		})
	}
}

func TestSeveralAsksInOneHandler(t *testing.T) {
	type name struct {
		Name string `json:"name" form:"required"`
	}
	type age struct {
		Age int `json:"age" form:"required,min=0"`
	}
	names, ages := ask.MustForm[name]("Name"), ask.MustForm[age]("Age")
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{})
			defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()
			steps := 0
			ask.AddTool(el, server, &mcp.Tool{Name: "who"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				n, err := names.Ask(ctx, "Who?")
				if err != nil {
					return nil, nil, err
				}
				steps++ // work between asks runs once, in both eras
				a, err := ages.Ask(ctx, "How old is "+n.Name+"?")
				if err != nil {
					return nil, nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s is %d", n.Name, a.Age)}}}, nil, nil
			})
			u := elicittest.Connect(t, server, era, elicittest.Accept(map[string]any{"name": "Ada"}), elicittest.Accept(map[string]any{"age": "36"}))
			res := u.Call(context.Background(), "who", map[string]any{})
			require.False(t, res.IsError)
			assert.Equal(t, "Ada is 36", res.Content[0].(*mcp.TextContent).Text)
			assert.Equal(t, 1, steps)
			assert.Equal(t, "How old is Ada?", u.Prompts()[1].Message)
		})
	}
}

// A client that goes away ends its questions as client_gone, and leaves nothing running:
// the owner's watcher (pull era: the only thing that sees a session end between rounds)
// ends with the session, before the Elicitor is closed.
func TestClientGoneEndsTheQuestion(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{})
			defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()
			outcomes := make(chan elicitation.Outcome, 1)
			ask.AddTool(el, server, &mcp.Tool{Name: "book"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				o, err := ask.Outcome(ctx, ask.Question{Message: "m", Form: bookingForm.Compiled()})
				require.NoError(t, err)
				outcomes <- o
				return nil, nil, nil
			})
			u := elicittest.Connect(t, server, era, elicittest.Never())
			go func() { _, _ = u.CallErr(context.Background(), "book", map[string]any{}) }()
			require.Eventually(t, func() bool { return len(u.Prompts()) == 1 }, failsafeBound, time.Millisecond)
			require.NoError(t, u.Vanish())
			o := <-outcomes
			assert.Equal(t, elicitation.Cancelled, o.State)
			assert.Equal(t, elicitation.ClientGone, o.Reason)
			goleak.VerifyNone(t, before)
		})
	}
}

func TestAskOutsideARegisteredHandler(t *testing.T) {
	_, err := ask.Ask(context.Background(), ask.Question{Message: "m", Form: bookingForm.Compiled()})
	var e *ask.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "not_in_a_call", e.Reason)
}

func TestTypedFormsFailWhenRegistered(t *testing.T) {
	type fileFormat struct {
		Doc validator.Upload `json:"doc" form:"format=date"`
	}
	type fileSize struct {
		Doc *validator.Upload `json:"doc" form:"max_bytes=0"`
	}
	type acceptText struct {
		S string `json:"s" form:"accept=image/*"`
	}
	type weird struct {
		M map[string]int `json:"m"`
	}
	type badTag struct {
		N int `form:"reqired"`
	}
	type badNum struct {
		N int `form:"min=x"`
	}
	type badOptions struct {
		N int `options:"a;b"`
	}
	type badFormat struct {
		S string `form:"format=phone"`
	}
	type badWhen struct {
		A string `json:"a" when:"b"`
		B string `json:"b"`
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fst(ask.NewForm[fileFormat]("")), `field Doc: format "date" does not apply to a file`},
		{fst(ask.NewForm[fileSize]("")), `field Doc: form tag max_bytes="0": expected a whole number of bytes`},
		{fst(ask.NewForm[acceptText]("")), "s: has accept or max_bytes, but those apply only to file fields"},
		{fst(ask.NewForm[weird]("")), "field M: has type map[string]int, which a form cannot ask"},
		{fst(ask.NewForm[badTag]("")), `field N: form tag has unknown option "reqired"`},
		{fst(ask.NewForm[badNum]("")), `field N: form tag min="x": expected a finite number`},
		{fst(ask.NewForm[badOptions]("")), "field N: has options, but only a string or []string field takes them"},
		{fst(ask.NewForm[badFormat]("")), `field S: format "phone": expected email, url, date or date-time`},
		{fst(ask.NewForm[badWhen]("")), `a: when names field "b", which comes after it`},
		{fst(ask.NewForm[int]("")), "is not a struct"},
	} {
		var fe *ask.FormError
		require.True(t, errors.As(c.err, &fe), "%v", c.err)
		assert.Contains(t, c.err.Error(), c.want)
	}
	assert.Panics(t, func() { ask.MustForm[fileFormat]("") })
}

func fst[T any](_ T, err error) error { return err }

// A pull-era call whose client never comes back is forgotten once its result has waited as
// long as a question may, even with no idle expiry (PullIdle < 0): nothing is kept for ever.
func TestAnAbandonedPullCallIsForgotten(t *testing.T) {
	mock := clock.NewMock()
	server, _, errs := newServer(t, mock) // PullIdle -1
	u := elicittest.Connect(t, server, elicittest.Pull)
	ctx := context.Background()
	first, err := u.Session.CallTool(ctx, &mcp.CallToolParams{Name: "book", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.NotEmpty(t, first.InputRequests)
	mock.Add(time.Minute) // the deadline: the handler gets its timeout and returns
	require.ErrorIs(t, <-errs, ask.ErrTimeout)
	// probe: a retry that changes nothing (it lacks the response), with the reason it hears.
	// It runs in a poll too, on a goroutine of its own: it reports to t, never stops it.
	probe := func(t require.TestingT) string {
		res, err := u.Session.CallTool(ctx, &mcp.CallToolParams{Name: "book", Arguments: map[string]any{}, RequestState: first.RequestState})
		require.NoError(t, err)
		p, err := elicittest.Payload(res)
		require.NoError(t, err)
		return fmt.Sprint(p["reason"])
	}
	require.Equal(t, "missing_response", probe(t), "the result waits for the client")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mock.Add(time.Minute)
		assert.Equal(c, "finished", probe(c))
	}, failsafeBound, time.Millisecond)
}

// Every prompt carries its question's deadline in _meta, in both eras: a pull-era client
// cannot hear a question end, so it closes its form then.
func TestPromptsCarryTheDeadline(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			clk := clock.NewMock()
			clk.Set(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
			server, _, errs := newServer(t, clk)
			u := elicittest.Connect(t, server, era, elicittest.Decline())
			res := u.Call(context.Background(), "book", map[string]any{})
			require.ErrorIs(t, <-errs, ask.ErrDeclined)
			require.True(t, res.IsError)
			prompts := u.Prompts()
			require.Len(t, prompts, 1)
			assert.Equal(t, "2026-11-23T10:01:00Z", prompts[0].Meta[ask.DeadlineKey], "now plus the Elicitor's minute")
		})
	}
}
