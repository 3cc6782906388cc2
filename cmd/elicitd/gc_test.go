package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// elicitd collects less often than Go's default, less so with the embedded store, unless GOGC says
// otherwise (see gcPercent).
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
	for kind, want := range map[string]int{"memory": gcPercent, "nats": gcPercent, "embedded": embeddedGCPercent} {
		assert.Equal(t, want, tuneGC(env(""), kind), kind)
		assert.Equal(t, want, debug.SetGCPercent(100), "unset GOGC: elicitd's target for %s", kind)
	}
	assert.Equal(t, 100, tuneGC(env("100"), "embedded"))
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left as the runtime read it")
}

// elicitd sets a soft memory limit unless GOMEMLIMIT says otherwise.
func TestTuneMemoryUnlessGOMEMLIMITIsSet(t *testing.T) {
	was := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(was)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	assert.Equal(t, int64(300<<20), tuneMemory(env(""), 300<<20))
	assert.Equal(t, int64(300<<20), debug.SetMemoryLimit(-1), "unset GOMEMLIMIT: elicitd's limit")
	debug.SetMemoryLimit(was)
	assert.Equal(t, was, tuneMemory(env("1GiB"), 300<<20), "GOMEMLIMIT set: left as the runtime read it")
	assert.Equal(t, was, debug.SetMemoryLimit(-1))
}

// A stdio server runs Go code on one thread unless GOMAXPROCS says otherwise (see stdioProcs).
func TestTuneProcsUnlessGOMAXPROCSIsSet(t *testing.T) {
	was := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(was)
	assert.Equal(t, stdioProcs, tuneProcs(func(string) string { return "" }))
	assert.Equal(t, stdioProcs, runtime.GOMAXPROCS(3), "unset GOMAXPROCS: one P")
	assert.Equal(t, 3, tuneProcs(func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}))
	assert.Equal(t, 3, runtime.GOMAXPROCS(0), "GOMAXPROCS set: left as the runtime read it")
	assert.Equal(t, stdioProcs, tuneProcs(func(k string) string {
		if k == "GOMAXPROCS" {
			return "abc" // the runtime ignores it too
		}
		return ""
	}))
	assert.Equal(t, stdioProcs, runtime.GOMAXPROCS(0))
}
