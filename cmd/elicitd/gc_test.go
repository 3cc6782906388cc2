package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// elicitd collects less often than Go's default unless GOGC says otherwise (see gcPercent).
func TestTuneGCUnlessGOGCIsSet(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)

	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}
	assert.Equal(t, gcPercent, tuneGC(env("")))
	assert.Equal(t, gcPercent, debug.SetGCPercent(100), "unset GOGC: elicitd's target")

	assert.Equal(t, 100, tuneGC(env("100")))
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left as the runtime read it")
}
