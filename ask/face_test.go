package ask_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/validator"
)

// newFace is an MCP server whose tools are added as a tool package adds them (ask.Tool,
// without the SDK's types), with the management tools, on clk.
func newFace(t *testing.T, clk clock.Clock, o ask.Options, tools ...ask.Tool) (*mcp.Server, *ask.Elicitor) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	o.Clock = clk
	el := ask.New(server, o)
	t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
	el.Add(server, tools...)
	el.AddManagement(server)
	return server, el
}

var shipForm = mustCompile(validator.Form{Title: "Address", Fields: []validator.Field{
	{Name: "city", Type: validator.Text, Label: "City", Required: true, MinLength: validator.Ptr(2)},
	{Name: "zip", Type: validator.Text, Label: "ZIP", Required: true, Pattern: "^[0-9]{5}$"},
}})

var phoneForm = mustCompile(validator.Form{Fields: []validator.Field{
	{Name: "phone", Type: validator.Text, Label: "Phone", Required: true},
}})

func mustCompile(f validator.Form) *validator.Compiled {
	c, err := validator.Compile(f)
	if err != nil {
		panic(err)
	}
	return c
}

type label struct {
	City, Zip, Phone string
}

// shipTool asks the address; its Then asks a follow-up for a phone number unless the
// city is "Nowhere", which it refuses with an error, and ends with a typed value.
func shipTool() ask.Tool {
	return ask.NewTool("ship", "Ship", "asks for an address",
		func(ctx context.Context, in struct {
			Note string `json:"note,omitempty"`
		}) (label, error) {
			var l label
			o, err := ask.Outcome(ctx, ask.Question{Title: "Address", Message: "Where to?", Form: shipForm,
				Reprompt: func(errs []validator.FieldError, asked int) string {
					return fmt.Sprintf("Fix %d field(s): %s", asked, errs[0].Field)
				},
				Then: func(data map[string]any) elicitation.Next {
					if _, asked := data["phone"]; asked {
						l.Phone = data["phone"].(string)
						return elicitation.Next{Value: l}
					}
					l.City, l.Zip = data["city"].(string), data["zip"].(string)
					if l.City == "Nowhere" {
						return elicitation.Next{Err: ask.Errorf("NO_ROUTE", "no_route", "no carrier goes to %s", l.City)}
					}
					return elicitation.Next{FollowUp: ask.FollowUp("And a phone number?", phoneForm)}
				}})
			if err != nil {
				return label{}, err
			}
			if o.State != elicitation.Completed {
				return label{}, ask.OutcomeError(o)
			}
			return o.Value.(label), nil
		})
}

// A tool package's tool asks through the face in both eras: the re-prompt keeps the valid
// answers and is worded by Reprompt, a follow-up made with Step keeps answers too, and the
// result is the continuation's typed value; an error from Then is the tool's error payload.
func TestToolsAskWithTypedContinuations(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server, el := newFace(t, clock.New(), ask.Options{}, shipTool())
			u := elicittest.Connect(t, server, era,
				elicittest.Accept(map[string]any{"city": "Oslo", "zip": "12"}),
				elicittest.Accept(map[string]any{"zip": "12345"}),
				elicittest.Accept(map[string]any{"phone": "555"}))
			res := u.Call(context.Background(), "ship", map[string]any{})
			require.False(t, res.IsError, "%+v", res.Content)
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"City": "Oslo", "Zip": "12345", "Phone": "555"}, p)
			prompts := u.Prompts()
			require.Len(t, prompts, 3)
			assert.Equal(t, "Fix 1 field(s): zip", prompts[1].Message)
			assert.ElementsMatch(t, []string{"zip"}, properties(t, prompts[1]), "the valid city is kept")
			assert.Equal(t, "And a phone number?", prompts[2].Message)

			u = elicittest.Connect(t, server, era, elicittest.Accept(map[string]any{"city": "Nowhere", "zip": "00000"}))
			res = u.Call(context.Background(), "ship", map[string]any{})
			require.True(t, res.IsError)
			p, err = elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, "NO_ROUTE", p["code"])
			assert.Equal(t, "no carrier goes to Nowhere", p["message"])

			stats := readStats(t, u)
			assert.EqualValues(t, 1, stats["completed"], "a question its tool refused is not completed")
			assert.EqualValues(t, 1, stats["cancelled"].(map[string]any)["tool_error"])
			assert.EqualValues(t, 1, stats["time_to_answer_samples"], "nor is it an answer time")
			_, _, n := el.AnswerPercentiles()
			assert.Equal(t, 1, n)
		})
	}
}

func readStats(t *testing.T, u *elicittest.User) map[string]any {
	t.Helper()
	rr, err := u.Session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: ask.StatsURI})
	require.NoError(t, err)
	var stats map[string]any
	require.NoError(t, json.Unmarshal([]byte(rr.Contents[0].Text), &stats))
	return stats
}

// Arguments are checked against the schema inferred from the input type and refused with
// the error payload naming the argument; a handler's plain error is ELICITATION_FAILED;
// a Text result is plain text.
func TestToolArgumentsErrorsAndResults(t *testing.T) {
	type in struct {
		Count int    `json:"count"`
		Mode  string `json:"mode,omitempty"`
	}
	server, _ := newFace(t, clock.New(), ask.Options{},
		ask.NewTool("count", "", "counts", func(_ context.Context, in in) (ask.Text, error) {
			if in.Mode == "fail" {
				return "", errors.New("the counter broke")
			}
			return ask.Text(strings.Repeat("*", in.Count)), nil
		}),
		ask.RawTool[in]("raw", "", "reads its own arguments", func(_ context.Context, args json.RawMessage) (any, error) {
			return map[string]any{"got": string(args)}, nil
		}))
	u := elicittest.ConnectNoForms(t, server, elicittest.Push)
	ctx := context.Background()

	res := u.Call(ctx, "count", map[string]any{"count": 3})
	require.False(t, res.IsError)
	assert.Equal(t, "***", res.Content[0].(*mcp.TextContent).Text)
	assert.Nil(t, res.StructuredContent)

	for args, want := range map[string]string{
		`{"count":"three"}`: `count: argument "count": type:`,
		`[1]`:               "the arguments of count must be a JSON object",
		`{"count":1,"x":2}`: "count: ",
	} {
		res = u.Call(ctx, "count", json.RawMessage(args))
		require.True(t, res.IsError, args)
		p, err := elicittest.Payload(res)
		require.NoError(t, err)
		assert.Equal(t, ask.CodeInvalidArgument, p["code"], args)
		assert.Contains(t, p["message"], want, args)
	}

	res = u.Call(ctx, "count", map[string]any{"count": 1, "mode": "fail"})
	p, err := elicittest.Payload(res)
	require.NoError(t, err)
	assert.Equal(t, ask.CodeFailed, p["code"])
	assert.Equal(t, "the counter broke", p["message"])

	res = u.Call(ctx, "raw", map[string]any{"count": 1})
	p, err = elicittest.Payload(res)
	require.NoError(t, err)
	assert.JSONEq(t, `{"count":1}`, p["got"].(string))

	tools, err := u.Session.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		if tool.Name == "raw" {
			schema, _ := json.Marshal(tool.InputSchema)
			assert.Contains(t, string(schema), `"count"`, "RawTool's schema comes from its input type")
		}
	}
}

// openQuestion starts the tool in the pull era and returns once its first round is out:
// the question is live and waits for the retry.
func openQuestion(t *testing.T, u *elicittest.User, tool string) *mcp.CallToolResult {
	t.Helper()
	res, err := u.Session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.NotEmpty(t, res.InputRequests, "the first round is out")
	return res
}

// The management tools see only the caller's questions: list, extend (on the mock clock,
// bounded) and cancel; another session's ids are not found, and a cancelled question's
// retry hears it ended.
func TestManagementIsScopedToTheOwner(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	server, _ := newFace(t, clk, ask.Options{Timeout: time.Minute, PullIdle: -1}, shipTool())
	alice := elicittest.Connect(t, server, elicittest.Pull)
	bob := elicittest.Connect(t, server, elicittest.Pull)
	ctx := context.Background()
	first := openQuestion(t, alice, "ship")

	list := func(u *elicittest.User) []any {
		p, err := elicittest.Payload(u.Call(ctx, "list_elicitations", map[string]any{}))
		require.NoError(t, err)
		return p["elicitations"].([]any)
	}
	require.Empty(t, list(bob))
	mine := list(alice)
	require.Len(t, mine, 1)
	q := mine[0].(map[string]any)
	assert.Equal(t, "ship", q["tool"])
	assert.Equal(t, "Address", q["title"])
	assert.Equal(t, "active", q["state"])
	assert.EqualValues(t, 1, q["round"])
	assert.EqualValues(t, 1, q["attempt"])
	assert.Equal(t, "2026-11-23T12:01:00Z", q["deadline"])
	id := q["id"].(string)

	payload := func(u *elicittest.User, tool string, args map[string]any) map[string]any {
		p, err := elicittest.Payload(u.Call(ctx, tool, args))
		require.NoError(t, err)
		return p
	}
	for tool, args := range map[string]map[string]any{"cancel_elicitation": {"id": id}, "extend_elicitation": {"id": id, "seconds": 30}} {
		p := payload(bob, tool, args)
		assert.Equal(t, ask.CodeNotFound, p["code"], "%s: another session's question", tool)
		assert.Equal(t, "not_found", p["reason"])
	}
	p := payload(alice, "extend_elicitation", map[string]any{"id": id, "seconds": 0})
	assert.Equal(t, "seconds_out_of_range", p["reason"])
	p = payload(alice, "extend_elicitation", map[string]any{"id": id, "seconds": 30})
	assert.Equal(t, "2026-11-23T12:01:30Z", p["deadline"])

	p = payload(alice, "cancel_elicitation", map[string]any{"id": id})
	assert.Equal(t, "cancelled", p["state"])
	p = payload(alice, "cancel_elicitation", map[string]any{"id": id})
	assert.Equal(t, "not_found", p["reason"], "it has left the registry")
	assert.Empty(t, list(alice))

	// The call waiting on it comes back and hears how it ended.
	res, err := alice.Session.CallTool(ctx, &mcp.CallToolParams{Name: "ship", Arguments: map[string]any{},
		RequestState: first.RequestState, InputResponses: mcp.InputResponseMap{"elicit-1": &mcp.ElicitResult{Action: "accept",
			Content: map[string]any{"city": "Oslo", "zip": "12345"}}}})
	require.NoError(t, err)
	p, err = elicittest.Payload(res)
	require.NoError(t, err)
	assert.Equal(t, ask.CodeCancelled, p["code"])
	assert.Equal(t, "operator", p["reason"])
}

// The limits refuse a start with their payloads, before the tool does costly work (Admits)
// and in Ask; a closed Elicitor refuses as shutting down.
func TestLimitsRefuseWithTheirPayloads(t *testing.T) {
	costly := 0
	admitted := ask.RawTool[struct{}]("costly", "", "checks Admits first", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if err := ask.Admits(ctx); err != nil {
			return nil, err
		}
		costly++
		return ask.Ask(ctx, ask.Question{Message: "m", Form: phoneForm})
	})
	ctx := context.Background()
	code := func(res *mcp.CallToolResult) string {
		p, err := elicittest.Payload(res)
		require.NoError(t, err)
		return fmt.Sprint(p["code"])
	}

	server, _ := newFace(t, clock.NewMock(), ask.Options{MaxLive: 1, PullIdle: -1}, shipTool(), admitted)
	u := elicittest.Connect(t, server, elicittest.Pull)
	openQuestion(t, u, "ship")
	assert.Equal(t, ask.CodeTooMany, code(u.Call(ctx, "costly", map[string]any{})))
	assert.Equal(t, ask.CodeTooMany, code(u.Call(ctx, "ship", map[string]any{})))
	assert.Zero(t, costly, "refused before the costly work")

	server, _ = newFace(t, clock.NewMock(), ask.Options{Rate: 1, Burst: 1, PullIdle: -1}, shipTool(), admitted)
	u = elicittest.Connect(t, server, elicittest.Pull)
	openQuestion(t, u, "ship")
	res := u.Call(ctx, "ship", map[string]any{})
	assert.Equal(t, ask.CodeRateLimited, code(res))
	p, _ := elicittest.Payload(res)
	assert.Equal(t, 1.0, p["details"].(map[string]any)["retry_after_seconds"])

	server, el := newFace(t, clock.NewMock(), ask.Options{}, admitted)
	u = elicittest.Connect(t, server, elicittest.Push)
	require.NoError(t, el.Close(ctx, elicitation.Shutdown))
	res = u.Call(ctx, "costly", map[string]any{})
	assert.Equal(t, ask.CodeCancelled, code(res))
	p, _ = elicittest.Payload(res)
	assert.Equal(t, "shutdown", p["reason"])
	assert.Error(t, ask.Admits(ctx), "outside a tool call")
}

// A raw handler registered with Elicitor.Handler asks too, and an *Error it returns is the
// error payload.
func TestRawHandlerAsks(t *testing.T) {
	for _, era := range elicittest.Eras {
		t.Run(string(era), func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			el := ask.New(server, ask.Options{})
			t.Cleanup(func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) })
			server.AddTool(&mcp.Tool{Name: "phone", InputSchema: ask.InputSchema[struct{}]()},
				el.Handler(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					data, err := ask.Ask(ctx, ask.Question{Message: "Your phone?", Form: phoneForm})
					if err != nil {
						return nil, err
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: data["phone"].(string)}}}, nil
				}))
			u := elicittest.Connect(t, server, era, elicittest.Accept(map[string]any{"phone": "555"}), elicittest.Decline())
			res := u.Call(context.Background(), "phone", map[string]any{})
			assert.Equal(t, "555", res.Content[0].(*mcp.TextContent).Text)
			res = u.Call(context.Background(), "phone", map[string]any{})
			require.True(t, res.IsError)
			p, err := elicittest.Payload(res)
			require.NoError(t, err)
			assert.Equal(t, ask.CodeDeclined, p["code"])
		})
	}
}

// Defaults in form tags take the field's type: a bool, a number, a list for a multi-select;
// one that does not parse is refused when the form is made.
func TestTypedDefaultsTakeTheFieldsType(t *testing.T) {
	type prefs struct {
		News   bool     `json:"news" form:"default=true"`
		Count  int      `json:"count" form:"default=3"`
		Ratio  float64  `json:"ratio" form:"default=0.5"`
		Extras []string `json:"extras" options:"a;b;c" form:"default=a|c"`
		Name   string   `json:"name" form:"default=Ada"`
	}
	f, err := ask.NewForm[prefs]("Prefs")
	require.NoError(t, err)
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(f.Compiled().WireSchema(), &schema))
	assert.Equal(t, true, schema.Properties["news"].Default)
	assert.Equal(t, 3.0, schema.Properties["count"].Default)
	assert.Equal(t, 0.5, schema.Properties["ratio"].Default)
	assert.Equal(t, []any{"a", "c"}, schema.Properties["extras"].Default)
	assert.Equal(t, "Ada", schema.Properties["name"].Default)

	for name, err := range map[string]error{
		"bool": fst(ask.NewForm[struct {
			B bool `json:"b" form:"default=maybe"`
		}]("x")),
		"number": fst(ask.NewForm[struct {
			N float64 `json:"n" form:"default=lots"`
		}]("x")),
	} {
		var fe *ask.FormError
		require.ErrorAs(t, err, &fe, name)
		assert.Contains(t, fe.Error(), "default", name)
	}
}
