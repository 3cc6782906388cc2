package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The walk-through prints what its doc comment promises: first what it shows, then a typo, a
// re-prompt that lists the error first, a completed outcome, and nothing left live.
func TestTheWalkThroughCompletes(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	assert.Equal(t, `engine: one elicitation walked through by elicitd's engine, with no MCP client: a
scripted person answers with a typo, is asked again with the error first, then answers properly.
attempt 1 of 3: "How heavy is the package?"
  the person types abc
attempt 2 of 3: "Package weight (kg): must be a positive, finite number\n\nHow heavy is the package?"
  the person types  5 
outcome: completed after 2 attempts, data map[weight_kg:5]
live elicitations left: 0
`, out.String())
}
