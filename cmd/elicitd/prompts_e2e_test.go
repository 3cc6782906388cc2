package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elicitd answers prompts/list (go-sdk serves it on every server), so it must declare the
// prompts capability: in server/discover (2026-07-28, MUST: the conformance suite's
// server-stateless) and in initialize's result alike.
func TestPromptsCapabilityIsDeclared(t *testing.T) {
	s := startHTTP(t)
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			cs, err := connectHTTP(t, s, era.version, "", nil)
			require.NoError(t, err)
			caps := cs.InitializeResult().Capabilities
			require.NotNil(t, caps)
			assert.NotNil(t, caps.Prompts, "prompts/list is served, so the prompts capability is declared")
			res, err := cs.ListPrompts(timeout(t), nil)
			require.NoError(t, err)
			assert.NotNil(t, res.Prompts)
		})
	}
}
