package stack

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// deep calls itself n times, each frame holding a few hundred bytes: the depth at which a
// goroutine's stack overflows its first sizes.
//
//go:noinline
func deep(n int) byte {
	var frame [256]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[(n+1)%len(frame)]
}

// A goroutine grown first runs a call 40 frames (some 12 KiB) deep as one grown on the way.
func TestGrowThenDeep(t *testing.T) {
	for _, grow := range []func(){Grow8K, Grow16K} {
		done := make(chan byte)
		go func() {
			grow()
			done <- deep(40)
		}()
		<-done
	}
}

// BenchmarkDeepGoroutine is a goroutine that goes 40 frames deep (some 12 KiB) once:
// "grown-on-the-way" lets the runtime grow its stack at each overflow, copying ever deeper
// stacks; "grown-first" calls Grow16K at its start.
func BenchmarkDeepGoroutine(b *testing.B) {
	for _, c := range []struct {
		name string
		grow func()
	}{{"grown-on-the-way", func() {}}, {"grown-first", Grow16K}} {
		b.Run(c.name, func(b *testing.B) {
			done := make(chan byte)
			for b.Loop() {
				go func() {
					c.grow()
					done <- deep(40)
				}()
				<-done
			}
		})
	}
}
