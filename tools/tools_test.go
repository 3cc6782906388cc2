package tools

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newServer is an MCP server with ask_user (and the conformance fixtures), as elicitd
// wires it.
func newServer(t *testing.T) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "test"}, nil)
	el := ask.New(srv, ask.Options{})
	el.Add(srv, AskUser(AskUserOptions{}))
	el.Add(srv, ConformanceFixtures()...)
	t.Cleanup(func() { _ = el.Close(context.Background(), elicitation.Shutdown) })
	return srv
}

func TestDecodeAskUserNamesTheBadArgument(t *testing.T) {
	in, err := decodeAskUser(json.RawMessage(`{"message":"m","form":{"fields":[]},"timeout_seconds":30,"max_attempts":2.0}`))
	require.NoError(t, err)
	assert.Equal(t, askUserArgs{Message: "m", Form: json.RawMessage(`{"fields":[]}`), TimeoutSeconds: 30, MaxAttempts: 2}, in)
	in, err = decodeAskUser(json.RawMessage(`{"message":"m","schema":{"type":"object"},"form":null}`))
	require.NoError(t, err)
	assert.Nil(t, in.Form, "null is absent")
	assert.Equal(t, json.RawMessage(`{"type":"object"}`), in.Schema)

	for raw, want := range map[string]string{
		`[1]`:                                   "the arguments must be a JSON object",
		`{"message":5}`:                         `"message" must be a string, got 5`,
		`{"message":"m","form":[1]}`:            `"form" must be an object, got [1]`,
		`{"message":"m","schema":"s"}`:          `"schema" must be an object, got "s"`,
		`{"message":"m","timeout_seconds":1.5}`: `"timeout_seconds" must be a whole number, got 1.5`,
		`{"message":"m","max_attempts":"3"}`:    `"max_attempts" must be a whole number, got "3"`,
		`{"message":"m","zeta":1,"alpha":2}`:    `unknown argument "alpha": ask_user takes message, form, schema, template, defaults, timeout_seconds, max_attempts`,
		`{"message":"m","template":5}`:          `"template" must be a string, got 5`,
		`{"message":"m","defaults":[1]}`:        `"defaults" must be an object, got [1]`,
	} {
		_, err := decodeAskUser(json.RawMessage(raw))
		var e *ask.Error
		require.ErrorAs(t, err, &e, raw)
		assert.Equal(t, ask.CodeInvalidArgument, e.Code, raw)
		assert.Equal(t, "invalid_arguments", e.Reason, raw)
		assert.Contains(t, e.Message, want, raw)
	}
}

func TestCompileAskReusesAFormItCompiledBefore(t *testing.T) {
	srv := &askUser{forms: newFormCache(formCacheBudget, formCacheEntries)}
	form := json.RawMessage(`{"title":"T","fields":[{"name":"a","type":"text"}]}`)
	first, err := srv.compile(askUserArgs{Message: "m", Form: form})
	require.NoError(t, err)
	again, err := srv.compile(askUserArgs{Message: "m", Form: slices.Clone(form)})
	require.NoError(t, err)
	assert.Same(t, first, again, "the same form's JSON: compiled once")

	other, err := srv.compile(askUserArgs{Message: "m", Form: json.RawMessage(`{"title":"T","fields":[{"name":"b","type":"text"}]}`)})
	require.NoError(t, err)
	assert.NotSame(t, first, other)
	assert.Equal(t, "b", other.Fields()[0].Name)

	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	fromSchema, err := srv.compile(askUserArgs{Message: "m", Schema: schema})
	require.NoError(t, err)
	_, err = srv.compile(askUserArgs{Message: "m", Form: schema})
	require.Error(t, err, "the same bytes as a form are another question: a schema is not a valid form")
	assert.Equal(t, "invalid_definition", err.(*ask.Error).Reason)
	again, _ = srv.compile(askUserArgs{Message: "m", Schema: schema})
	assert.Same(t, fromSchema, again)

	sensitive := json.RawMessage(`{"fields":[{"name":"pw","type":"text","sensitive":true}]}`)
	secret, err := srv.compile(askUserArgs{Message: "m", Form: sensitive})
	require.NoError(t, err, "a secret is asked on elicitd's page, not refused")
	assert.True(t, secret.NeedsPage())
	again, _ = srv.compile(askUserArgs{Message: "m", Form: sensitive})
	assert.Same(t, secret, again)
}

// The arguments ask_user decodes by hand are exactly those its published input schema
// (inferred from AskUserInput) lists.
func TestAskUserDecodesTheArgumentsItsSchemaLists(t *testing.T) {
	var names []string
	for name := range ask.InputSchema[AskUserInput]().Properties {
		names = append(names, name)
	}
	assert.ElementsMatch(t, names, askUserArgNames)
}
