// Package stack grows a goroutine's stack ahead of the calls that need it.
//
// A goroutine starts with a small stack (2 KiB, or the average the collector last saw) and
// the runtime doubles it whenever a call would overflow it, copying the stack and adjusting
// every frame on it: the deeper the goroutine is at that moment, the more it costs (tens of
// thousands of instructions a copy under a JSON encoder or a logger, some 30 frames deep).
// A goroutine that will need a larger stack before it is done can take it where it is
// shallow, at its start, by calling Grow8K or Grow16K: one copy of a frame or a few.
//
// Only for goroutines that would reach that size anyway before they wait: a goroutine
// parked with a stack larger than it needs holds the memory until a collection finds it
// using less than a quarter of it.
package stack

// Grow8K makes the calling goroutine's stack at least 8 KiB: a call with a 6 KiB frame needs
// that much, and the runtime doubles the stack until it fits.
func Grow8K() { grow8K(0) }

// Grow16K makes the calling goroutine's stack at least 16 KiB, as Grow8K.
func Grow16K() { grow16K(0) }

// Their frames are what grows the stack; returning a byte of it keeps it from being
// optimised away.

//go:noinline
func grow8K(i int) byte {
	var frame [6 << 10]byte
	return frame[i]
}

//go:noinline
func grow16K(i int) byte {
	var frame [12 << 10]byte
	return frame[i]
}
