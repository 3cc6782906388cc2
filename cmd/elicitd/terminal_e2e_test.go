package main

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Started by hand on a terminal, elicitd says once what it waits for; junk typed there gets
// a parse error on screen, not silence; Ctrl-D ends it.
func TestStartedOnATerminal(t *testing.T) {
	cmd := exec.Command(bin)
	tty, err := pty.Start(cmd)
	require.NoError(t, err)
	defer func() { _ = tty.Close() }()

	var mu sync.Mutex
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			mu.Lock()
			screen.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shows := func(s string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(screen.String(), s)
		}
	}
	require.Eventually(t, shows("waiting for an MCP client on stdin"), failsafe, 5*time.Millisecond)
	_, err = tty.Write([]byte("hello\n"))
	require.NoError(t, err)
	require.Eventually(t, shows("-32700"), failsafe, 5*time.Millisecond, "junk gets a parse error")
	_, err = tty.Write([]byte{4}) // Ctrl-D: end of input
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	<-read
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, strings.Count(screen.String(), "waiting for an MCP client"), "one line, once")
}
