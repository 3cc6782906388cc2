package tools

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/ask"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecodeAskUserNamesTheBadArgument(t *testing.T) {
	in, err := decodeAskUser(json.RawMessage(`{"message":"m","form":{"fields":[]},"timeout_seconds":30,"max_attempts":2.0}`))
	require.Nil(t, err)
	assert.Equal(t, askUserArgs{Message: "m", Form: json.RawMessage(`{"fields":[]}`), TimeoutSeconds: 30, MaxAttempts: 2}, in)
	in, err = decodeAskUser(json.RawMessage(`{"message":"m","schema":{"type":"object"},"form":null}`))
	require.Nil(t, err)
	assert.Nil(t, in.Form, "null is absent")
	assert.Equal(t, json.RawMessage(`{"type":"object"}`), in.Schema)

	for raw, want := range map[string]string{
		`[1]`:                                   "the arguments must be a JSON object",
		`{"message":5}`:                         `"message" must be a string, got 5`,
		`{"message":"m","form":[1]}`:            `"form" must be an object, got [1]`,
		`{"message":"m","schema":"s"}`:          `"schema" must be an object, got "s"`,
		`{"message":"m","timeout_seconds":1.5}`: `"timeout_seconds" must be a whole number, got 1.5`,
		`{"message":"m","max_attempts":"3"}`:    `"max_attempts" must be a whole number, got "3"`,
		`{"message":"m","zeta":1,"alpha":2}`:    `unknown argument "alpha": ask_user takes message, form, schema, timeout_seconds, max_attempts`,
	} {
		_, err := decodeAskUser(json.RawMessage(raw))
		require.NotNil(t, err, raw)
		assert.Equal(t, ask.CodeInvalidArgument, err.Code, raw)
		assert.Equal(t, "invalid_arguments", err.Reason, raw)
		assert.Contains(t, err.Message, want, raw)
	}
}

func TestCompileAskReusesAFormItCompiledBefore(t *testing.T) {
	srv := NewServer(Options{}, "test")
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	form := json.RawMessage(`{"title":"T","fields":[{"name":"a","type":"text"}]}`)
	first, err := srv.compileAsk(askUserArgs{Message: "m", Form: form})
	require.Nil(t, err)
	again, err := srv.compileAsk(askUserArgs{Message: "m", Form: slices.Clone(form)})
	require.Nil(t, err)
	assert.Same(t, first, again, "the same form's JSON: compiled once")

	other, err := srv.compileAsk(askUserArgs{Message: "m", Form: json.RawMessage(`{"title":"T","fields":[{"name":"b","type":"text"}]}`)})
	require.Nil(t, err)
	assert.NotSame(t, first, other)
	assert.Equal(t, "b", other.Fields()[0].Name)

	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	fromSchema, err := srv.compileAsk(askUserArgs{Message: "m", Schema: schema})
	require.Nil(t, err)
	_, err = srv.compileAsk(askUserArgs{Message: "m", Form: schema})
	require.NotNil(t, err, "the same bytes as a form are another question: a schema is not a valid form")
	assert.Equal(t, "invalid_definition", err.Reason)
	again, _ = srv.compileAsk(askUserArgs{Message: "m", Schema: schema})
	assert.Same(t, fromSchema, again)

	sensitive := json.RawMessage(`{"fields":[{"name":"pw","type":"text","sensitive":true}]}`)
	for range 2 {
		_, err = srv.compileAsk(askUserArgs{Message: "m", Form: sensitive})
		require.NotNil(t, err, "a refusal is never cached as a form")
		assert.Equal(t, "sensitive_field", err.Reason)
	}
}
