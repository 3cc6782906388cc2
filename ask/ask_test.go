package ask

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/validator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStateTokensAreSignedAndBound(t *testing.T) {
	s := newStateSigner([]byte(strings.Repeat("k", 32)))
	st := requestState{ID: "E1", Owner: "O1", Tool: "ask_user", Round: 2, Expires: 1000}
	tok := s.sign(st)
	got, err := s.open(tok)
	require.NoError(t, err)
	assert.Equal(t, st, got)

	payload, mac, _ := strings.Cut(tok, ".")
	other := newStateSigner([]byte(strings.Repeat("x", 32)))
	for name, bad := range map[string]string{
		"another key":     other.sign(st),
		"altered payload": payload + "X." + mac,
		"altered mac":     payload + "." + strings.ToUpper(mac),
		"no mac":          payload,
		"empty":           "",
		"garbage":         "!!!.???",
		"swapped payload": strings.SplitN(s.sign(requestState{ID: "E2", Owner: "O1"}), ".", 2)[0] + "." + mac,
	} {
		_, err := s.open(bad)
		assert.ErrorIs(t, err, errBadState, name)
	}
	assert.False(t, st.expired(time.Unix(999, 0)))
	assert.True(t, st.expired(time.Unix(1000, 0)), "expired at its expiry")
}

func TestSameArgsIgnoresKeyOrderAndSpacing(t *testing.T) {
	a := json.RawMessage(`{"message":"m","form":{"b":1,"a":[1,2]}}`)
	assert.True(t, sameArgs(a, json.RawMessage(` { "form" : {"a":[1,2],"b":1}, "message":"m" } `)), "key order and spacing do not matter")
	assert.False(t, sameArgs(a, json.RawMessage(`{"message":"n","form":{"b":1,"a":[1,2]}}`)))
	assert.False(t, sameArgs(a, json.RawMessage(`{"message":"m","form":{"b":1,"a":[2,1]}}`)), "array order matters")
	assert.True(t, sameArgs(nil, json.RawMessage(`null`)))
}

func TestClientModesReadPullEraCapabilitiesAsTheSDKDoes(t *testing.T) {
	for _, caps := range []string{
		`{"elicitation":{}}`, `{"elicitation":{"form":{}}}`, `{"elicitation":{"url":{}}}`,
		`{"elicitation":{"form":{},"url":{}}}`, `{"elicitation":{"form":null,"url":{}}}`, `{}`,
		`{"elicitation":null}`, `{"sampling":{}}`, `{"elicitation":{"form":true}}`, `{"elicitation":"yes"}`, `null`, `[]`,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(caps), &v))
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: v}}}
		assert.Equal(t, modesOf(req.ClientCapabilities()), clientModes(req), caps)
	}
	form := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	assert.True(t, clientModes(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: form}}}).form)
	assert.Equal(t, modes{}, clientModes(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}}), "no capabilities at all")
}

func TestOutcomeErrorCodes(t *testing.T) {
	errs := []validator.FieldError{{Field: "w", Message: "W: bad"}}
	cases := []struct {
		o    elicitation.Outcome
		code string
	}{
		{elicitation.Outcome{State: elicitation.TimedOut}, CodeTimeout},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.Declined}, CodeDeclined},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.MaxAttempts, Attempts: 3, Errors: errs}, CodeMaxRetries},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.TransportError, Err: errors.New("pipe")}, CodeFailed},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.ClientGone}, CodeCancelled},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.UserCancelled}, CodeCancelled},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.InvalidResponse, Err: errors.New(`action "ok"`)}, CodeInvalidResponse},
		{elicitation.Outcome{State: elicitation.Cancelled, Reason: elicitation.TooManyRounds, Rounds: 20}, CodeTooManyRounds},
	}
	for _, c := range cases {
		e := OutcomeError(c.o)
		assert.Equal(t, c.code, e.Code, c.o.Reason.String())
		res := e.Result()
		assert.True(t, res.IsError)
		var payload map[string]any
		require.NoError(t, json.Unmarshal(res.StructuredContent.(json.RawMessage), &payload))
		assert.Equal(t, c.code, payload["code"])
		assert.Equal(t, []any{}, payload["missing"], "missing is always a list")
		assert.Contains(t, payload, "reason")
	}
	assert.Contains(t, OutcomeError(cases[2].o).Message, "after 3 attempts")
	assert.Contains(t, OutcomeError(cases[3].o).Message, "pipe")
	assert.Contains(t, OutcomeError(cases[6].o).Message, `action "ok"`)
	assert.Equal(t, "invalid_response", OutcomeError(cases[6].o).Reason)
	assert.Contains(t, OutcomeError(cases[7].o).Message, "after 20 rounds")
	assert.Equal(t, "too_many_rounds", OutcomeError(cases[7].o).Reason)
}

func TestClamp(t *testing.T) {
	assert.Equal(t, 3, clamp(0, 1, 3), "zero takes the server's")
	assert.Equal(t, 1, clamp(-5, 1, 3))
	assert.Equal(t, 3, clamp(99, 1, 3))
	assert.Equal(t, time.Second, clamp(time.Millisecond, time.Second, time.Minute))
	assert.Equal(t, time.Minute, clamp(time.Hour, time.Second, time.Minute))
}

func TestToAnswer(t *testing.T) {
	a := toAnswer(2, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"qty": " 5 "}}, nil)
	assert.Equal(t, elicitation.Accept, a.Action)
	assert.Equal(t, map[string]any{"qty": " 5 "}, a.Content, "the answer as the client sent it, for the form to check")
	assert.Empty(t, a.Rejections)
	assert.Equal(t, 2, a.Round)
	assert.Equal(t, elicitation.Failed, toAnswer(1, nil, errors.New("broken pipe")).Action)
	assert.Equal(t, elicitation.Decline, toAnswer(1, &mcp.ElicitResult{Action: "decline"}, nil).Action)
	assert.Equal(t, elicitation.Cancel, toAnswer(1, &mcp.ElicitResult{Action: "cancel"}, nil).Action)
	acc := toAnswer(1, &mcp.ElicitResult{Action: "accept"}, nil)
	assert.Equal(t, map[string]any{}, acc.Content, "accept without content is an empty answer")
	shrug := toAnswer(1, &mcp.ElicitResult{Action: "shrug"}, nil)
	assert.Equal(t, elicitation.Unusable, shrug.Action, "an unknown action is the client's fault, not the transport's")
	assert.ErrorContains(t, shrug.Err, `"shrug"`)
}

// A token's last character carries spare bits; changing them must not leave a valid token
// (3 such substitutions of the MAC's last character were accepted).
func TestStateTokensDecodeStrictly(t *testing.T) {
	s := newStateSigner([]byte(strings.Repeat("k", 32)))
	tok := s.sign(requestState{ID: "E1", Owner: "O1", Tool: "ask_user", Round: 1, Expires: 1000})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	payload, _, _ := strings.Cut(tok, ".")
	for _, at := range []int{len(tok) - 1, len(payload) - 1} {
		opened := 0
		for _, c := range alphabet {
			altered := tok[:at] + string(c) + tok[at+1:]
			if _, err := s.open(altered); err == nil {
				opened++
				assert.Equal(t, tok, altered, "only the token as issued opens")
			}
		}
		assert.Equal(t, 1, opened, "position %d", at)
	}
}

// A token's payload decodes only as written: any cut or extra byte is refused, never a panic
// (it is read only after its MAC checked out, but a key could leak).
func TestStatePayloadDecodesOnlyAsWritten(t *testing.T) {
	behind := &firstRound{Args: [digestBytes]byte{1, 2, 3}, Prompt: [digestBytes]byte{15: 9}, Due: 1_790_000_600_123, Until: 1_790_000_060_000}
	for _, st := range []requestState{
		{ID: "id-1", Owner: "owner", Tool: "ask_user", Round: 3, Expires: 1_790_000_000},
		{ID: "id-2", Owner: "owner", Tool: "ask_user", Round: 1, Expires: 1_790_000_000, Behind: behind},
	} {
		b := st.appendBinary(nil)
		got, ok := decodeState(b)
		require.True(t, ok)
		assert.Equal(t, st, got)
		for n := range len(b) {
			_, ok := decodeState(b[:n])
			assert.False(t, ok, "cut at %d", n)
		}
		_, ok = decodeState(append(b, 0))
		assert.False(t, ok, "a byte too many")
		_, ok = decodeState(append([]byte{stateVersionBehind + 1}, b[1:]...))
		assert.False(t, ok, "another version")
	}
	v1 := requestState{ID: "id-1", Owner: "owner", Tool: "ask_user", Round: 1, Expires: 1_790_000_000}.appendBinary(nil)
	_, ok := decodeState(append([]byte{stateVersionBehind}, v1[1:]...))
	assert.False(t, ok, "version 2 without what it carries")
}

// A first round written behind its prompt carries the digests of its arguments and prompt,
// as the record keeps them.
func TestDigestsTravelRawAndBack(t *testing.T) {
	d := argsDigest([]byte(`{"a":1}`))
	b, ok := rawDigest(d)
	require.True(t, ok)
	assert.Equal(t, d, digestString(b))
	for _, bad := range []string{"", "short", d + "A", "!!!!!!!!!!!!!!!!!!!!!!"} {
		_, ok := rawDigest(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add(requestState{ID: "a", Owner: "b", Tool: "c", Round: 1, Expires: 5}.appendBinary(nil))
	f.Add(requestState{ID: "a", Owner: "b", Tool: "c", Round: 1, Expires: 5, Behind: &firstRound{Due: -1, Until: 7}}.appendBinary(nil))
	f.Add([]byte{stateVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, ok := decodeState(b); ok {
			assert.Equal(t, b, st.appendBinary(nil), "what decodes encodes back the same")
		}
	})
}

// Result reads an error and never writes it: the sentinels and Ask's error outside a call
// are shared values, which concurrent calls may turn into results at once.
func TestResultDoesNotChangeTheError(t *testing.T) {
	res := ErrDeclined.Result()
	assert.Nil(t, ErrDeclined.Missing, "the sentinel is unchanged")
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"missing":[]`, "the payload still lists none as []")
	done := make(chan struct{})
	go func() { defer close(done); _ = errNotInCall.Result() }()
	_ = errNotInCall.Result()
	<-done
}

// A call that starts after its stream has ended (the client dropped the POST before the SDK
// dispatched the call) starts with its context ended as client_gone; a call whose stream is
// live is watched; without WatchStreams, or outside HTTP, nothing is watched.
func TestWatchSeesStreamsThatEndedBeforeTheirCall(t *testing.T) {
	el := New(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), Options{})
	defer func() { require.NoError(t, el.Close(context.Background(), elicitation.Shutdown)) }()
	on := func(id string) *mcp.CallToolRequest {
		return &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: http.Header{"Elicitd-Stream": {id}}}}
	}
	ctx, done := el.watch(context.Background(), on("1"))
	done()
	assert.NoError(t, context.Cause(ctx), "without WatchStreams a client's header names nothing")

	_ = el.WatchStreams(http.NotFoundHandler())
	ctx, done = el.watch(context.Background(), on("gone"))
	defer done()
	assert.Equal(t, elicitation.ClientGone, reasonOf(ctx))

	st := &stream{}
	el.streams.Store("live", st)
	ctx, done = el.watch(context.Background(), on("live"))
	defer done()
	assert.NoError(t, ctx.Err(), "a live stream's call goes on")
	st.end()
	assert.Equal(t, elicitation.ClientGone, reasonOf(ctx), "until the stream ends")

	ctx, done = el.watch(context.Background(), &mcp.CallToolRequest{})
	defer done()
	assert.NoError(t, ctx.Err(), "stdio: no header, nothing to watch")
}
