package ask_test

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicittest"
)

// A person is never cut off before the deadline they were shown: these tests take their
// time on the mock clock, in both eras.

// phoneTool asks for a phone number and returns it.
func phoneTool() ask.Tool {
	return ask.NewTool("phone", "Phone", "asks for a phone number",
		func(ctx context.Context, _ struct{}) (map[string]any, error) {
			return ask.Ask(ctx, ask.Question{Title: "Phone", Message: "Your phone number?", Form: phoneForm})
		})
}

var aPhone = map[string]any{"phone": "555 0100"}

// shownDeadline is the deadline a prompt shows the person.
func shownDeadline(t *testing.T, p *mcp.ElicitParams) time.Time {
	t.Helper()
	s, ok := p.Meta[ask.DeadlineKey].(string)
	require.True(t, ok, "the prompt carries its deadline")
	d, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return d
}

// listed is the deadline list_elicitations shows for the caller's one open question, and
// its id.
func listed(t *testing.T, cs *mcp.ClientSession) (id string, deadline time.Time) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_elicitations", Arguments: map[string]any{}})
	require.NoError(t, err)
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	list := p["elicitations"].([]any)
	require.Len(t, list, 1)
	q := list[0].(map[string]any)
	d, err := time.Parse(time.RFC3339, q["deadline"].(string))
	require.NoError(t, err)
	return q["id"].(string), d
}

func extend(t *testing.T, cs *mcp.ClientSession, id string, seconds int) time.Time {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "extend_elicitation",
		Arguments: map[string]any{"id": id, "seconds": seconds}})
	require.NoError(t, err)
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	require.False(t, res.IsError, "extend: %v", p)
	d, err := time.Parse(time.RFC3339, p["deadline"].(string))
	require.NoError(t, err)
	return d
}

// answersThePhone calls phone as u and requires it to complete with aPhone's number.
func answersThePhone(t *testing.T, u *elicittest.User, why string) {
	t.Helper()
	res := u.Call(context.Background(), "phone", map[string]any{})
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %v", why, p)
	assert.Equal(t, "555 0100", p["phone"])
}

func mockAt10() *clock.Mock {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	return mock
}

// With the defaults (no idle expiry), a person who answers at 90% of the question's
// deadline has their answer taken.
func TestAnAnswerAtNinetyPercentOfTheDeadlineCompletes(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			mock := mockAt10()
			server, el := newFace(t, mock, ask.Options{Timeout: 10 * time.Minute}, phoneTool())
			u := elicittest.Connect(t, server, era, elicittest.Before(func(p *mcp.ElicitParams) {
				assert.Equal(t, mock.Now().Add(10*time.Minute), shownDeadline(t, p), "the deadline shown is the question's")
				mock.Add(9 * time.Minute)
			}, elicittest.Accept(aPhone)))
			answersThePhone(t, u, "")
			assert.Zero(t, el.Registry().Len())
		})
	}
}

// An agent that extends a question gives the person that time: an answer past the original
// deadline, before the extended one, completes.
func TestAnExtendedQuestionAnsweredPastItsFirstDeadlineCompletes(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			mock := mockAt10()
			server, _ := newFace(t, mock, ask.Options{Timeout: 10 * time.Minute}, phoneTool())
			var u *elicittest.User
			u = elicittest.Connect(t, server, era, elicittest.Before(func(*mcp.ElicitParams) {
				first := mock.Now().Add(10 * time.Minute)
				mock.Add(9 * time.Minute)
				id, shown := listed(t, u.Session)
				require.Equal(t, first, shown)
				assert.Equal(t, first.Add(5*time.Minute), extend(t, u.Session, id, 300))
				_, shown = listed(t, u.Session)
				assert.Equal(t, first.Add(5*time.Minute), shown, "the list shows the extended deadline")
				mock.Add(3 * time.Minute) // 12 minutes in: past the first deadline
			}, elicittest.Accept(aPhone)))
			answersThePhone(t, u, "")
		})
	}
}

// With PullIdle set, a pull-era round ends when it is left unanswered that long; every
// place that shows the time left shows the earlier of that and the deadline, and an
// extension moves both. A push-era question has no idle expiry.
func TestWithPullIdleTheShownDeadlineIsTheOneThatApplies(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			mock := mockAt10()
			server, el := newFace(t, mock, ask.Options{Timeout: 10 * time.Minute, PullIdle: 2 * time.Minute}, phoneTool())
			applies := 10 * time.Minute
			if era == elicittest.Pull {
				applies = 2 * time.Minute
			}
			var u *elicittest.User
			u = elicittest.Connect(t, server, era, elicittest.Before(func(p *mcp.ElicitParams) {
				asked := mock.Now()
				require.Equal(t, asked.Add(applies), shownDeadline(t, p), "the prompt shows the time that applies")
				id, shown := listed(t, u.Session)
				require.Equal(t, asked.Add(applies), shown, "so does the list")
				assert.Equal(t, asked.Add(applies+time.Minute), extend(t, u.Session, id, 60), "an extension moves it")
				_, shown = listed(t, u.Session)
				require.Equal(t, asked.Add(applies+time.Minute), shown)
				mock.Add(applies) // before what applies, now one minute later
			}, elicittest.Accept(aPhone)), elicittest.Before(func(p *mcp.ElicitParams) {
				// The second call: the person now lets the shown time run out.
				asked := mock.Now()
				require.Equal(t, asked.Add(applies), shownDeadline(t, p), "a new question starts afresh")
				mock.Add(applies)
			}, elicittest.Never()))
			answersThePhone(t, u, "answered before the shown time")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, _ := u.CallErr(ctx, "phone", map[string]any{})
				done <- res
			}()
			want := "timeout"
			if era == elicittest.Pull {
				want = "abandoned"
			}
			require.Eventually(t, func() bool {
				s := el.Registry().Stats()
				return s.TimedOut+s.Cancelled["abandoned"] == 1
			}, failsafeBound, time.Millisecond, "the question ends at the shown time")
			s := el.Registry().Stats()
			if want == "timeout" {
				assert.EqualValues(t, 1, s.TimedOut)
			} else {
				assert.EqualValues(t, 1, s.Cancelled["abandoned"])
			}
			if era == elicittest.Pull {
				cancel() // nothing tells a pull-era client: it gives up
			}
			<-done
		})
	}
}
