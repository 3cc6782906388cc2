package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

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
		p, stop := tuneGC(env(""), kind, true)
		stop()
		assert.Equal(t, want, p, kind)
		assert.Equal(t, want, debug.SetGCPercent(100), "unset GOGC: elicitd's target for %s", kind)
	}
	p, stop := tuneGC(env("100"), "embedded", true)
	stop()
	assert.Equal(t, 100, p)
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left as the runtime read it")
}

// The headroom is kept over HTTP and with the embedded store; a stdio server with a store
// outside its process collects at gcPercent while its heap is small (the cap on growth
// applies to every kind).
func TestKeepsHeadroom(t *testing.T) {
	for _, kind := range []string{"memory", "embedded", "nats"} {
		assert.True(t, keepsHeadroom(kind, true), "HTTP, %s", kind)
	}
	assert.True(t, keepsHeadroom("embedded", false), "stdio, embedded")
	assert.False(t, keepsHeadroom("memory", false), "stdio, memory")
	assert.False(t, keepsHeadroom("nats", false), "stdio, nats")
}

// The target lets the heap grow by about the headroom, and by the base percent at the least,
// but never by more than 64 MiB or a quarter of the live heap, whichever is more.
func TestHeadroomPercent(t *testing.T) {
	const mib = 1 << 20
	assert.Equal(t, 1600, headroomPercent(200, 4*mib, 4*mib, 64*mib), "a small heap: 64 MiB of growth")
	assert.Equal(t, 800, headroomPercent(200, 4*mib, 8*mib, 64*mib), "stacks and globals count as GOGC counts them")
	assert.Equal(t, 200, headroomPercent(200, 32*mib, 32*mib, 64*mib), "the base gives as much as the cap")
	assert.Equal(t, 160, headroomPercent(200, 40*mib, 40*mib, 64*mib), "the base would give more than 64 MiB: the cap")
	assert.Equal(t, 64, headroomPercent(200, 100*mib, 100*mib, 64*mib), "100 MiB live: 64 MiB of growth, not the base's 200")
	assert.Equal(t, 25, headroomPercent(200, 1024*mib, 1024*mib, 64*mib), "1 GiB live: a quarter of it")
	assert.Equal(t, 25, headroomPercent(400, 8192*mib, 8192*mib, 0), "8 GiB live, no headroom kept: a quarter of it")
	assert.Equal(t, 400, headroomPercent(400, 1*mib, 3*mib/2, 0), "a small heap without headroom: the base")
	assert.Equal(t, 200, headroomPercent(200, 0, 0, 64*mib), "nothing read")
	// A heap of 1 MiB (1.5 with stacks and globals): 64/1.5 would be GOGC 4266, whose heap
	// minimum (4 MiB * 42.66) is 170 MiB. The minimum bounds it: (1 + 64) MiB is GOGC 1625.
	assert.Equal(t, 1625, headroomPercent(200, 1*mib, 3*mib/2, 64*mib), "the runtime's heap minimum")
	assert.Equal(t, 1600, headroomPercent(200, 1, 1, 64*mib), "a tiny heap: the heap minimum")
}

// After a collection, the keeper sets the target the live heap calls for; stopped, it sets
// none.
func TestKeepHeadroomSetsTheTargetAfterACollection(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	set := make(chan int, 16)
	stop := keepHeadroom(100, 1<<40, func(p int) { set <- p }) // more than any test heap
	runtime.GC()
	select {
	case p := <-set:
		assert.Greater(t, p, 100, "a heap far smaller than the headroom")
		assert.Equal(t, p, debug.SetGCPercent(100), "the target in force")
	case <-time.After(failsafe):
		t.Fatal("no target was set after a collection")
	}
	stop()

	// A keeper stopped before any collection sets nothing after one: its cleanup, queued
	// by the first collection, runs before the test's own, queued by the second. The
	// runtime does not promise that order (runtime.AddCleanup), it only keeps it today: were
	// it to change, this check could pass without a stopped keeper being looked at.
	debug.SetGCPercent(100)
	stop = keepHeadroom(100, 1<<40, func(p int) { set <- p })
	stop()
	runtime.GC()
	ran := make(chan struct{})
	runtime.AddCleanup(&struct{ _ *byte }{}, func(struct{}) { close(ran) }, struct{}{})
	runtime.GC()
	select {
	case <-ran:
	case <-time.After(failsafe):
		t.Fatal("the test's cleanup did not run")
	}
	select {
	case p := <-set:
		t.Fatalf("a stopped keeper set the target to %d", p)
	default:
	}
	assert.Equal(t, 100, debug.SetGCPercent(100), "stopped: the target stays as set")
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
