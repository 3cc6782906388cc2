package main

import (
	"bytes"
	"io"
	"sync"
)

// serverLines copies the server's stderr, line by line, to elicit's stderr (-v). While a
// question is on screen the lines are held, so they never land inside the form, and are
// written once it closes; at most holdBytes are held, the oldest dropped first.
type serverLines struct {
	out io.Writer

	mu      sync.Mutex
	partial []byte   // the start of a line not yet ended
	held    [][]byte // complete lines held while a question is open
	heldN   int
	holding bool
}

const holdBytes = 64 << 10

func (s *serverLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		line := append([]byte("[server] "), s.partial[:i+1]...)
		s.partial = s.partial[i+1:]
		if !s.holding {
			_, _ = s.out.Write(line)
			continue
		}
		s.held, s.heldN = append(s.held, line), s.heldN+len(line)
		for s.heldN > holdBytes && len(s.held) > 0 {
			s.heldN -= len(s.held[0])
			s.held = s.held[1:]
		}
	}
	return len(p), nil
}

// hold holds the lines from now until the func it returns is called, which writes them.
func (s *serverLines) hold() (release func()) {
	s.mu.Lock()
	s.holding = true
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.holding = false
		for _, line := range s.held {
			_, _ = s.out.Write(line)
		}
		s.held, s.heldN = nil, 0
	}
}
