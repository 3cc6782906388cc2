//go:build unix

package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe in blocking mode, as an MCP client hands its server: unlike
// os.Pipe's, the runtime does not poll it.
func blockingPipe(t *testing.T) (r, w *os.File) {
	var fds [2]int
	require.NoError(t, syscall.Pipe(fds[:]))
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func TestPollableIsAPipeADeadlineInterrupts(t *testing.T) {
	_, w := blockingPipe(t)
	require.ErrorIs(t, w.SetWriteDeadline(time.Now()), os.ErrNoDeadline, "a blocking pipe's write cannot be interrupted")

	out, restore := pollable(w)
	require.NotSame(t, w, out)
	assert.NoError(t, out.SetWriteDeadline(time.Time{}))
	assert.NoError(t, out.SetReadDeadline(time.Time{}))
	restore()

	// The blocking mode is back on the pipe: a new descriptor of it is not polled.
	fd, err := syscall.Dup(int(w.Fd()))
	require.NoError(t, err)
	again := os.NewFile(uintptr(fd), "again")
	defer again.Close()
	assert.ErrorIs(t, again.SetWriteDeadline(time.Now()), os.ErrNoDeadline)

	// A pipe handed over non-blocking stays so: restore puts back what was.
	var fds [2]int
	require.NoError(t, syscall.Pipe(fds[:]))
	defer syscall.Close(fds[0])
	require.NoError(t, syscall.SetNonblock(fds[1], true))
	nb := os.NewFile(uintptr(fds[1]), "nb")
	defer nb.Close()
	_, restore = pollable(nb)
	restore()
	flags, err := unix.FcntlInt(uintptr(fds[1]), unix.F_GETFL, 0)
	require.NoError(t, err)
	assert.NotZero(t, flags&unix.O_NONBLOCK, "still non-blocking")

	f, err := os.Create(t.TempDir() + "/out")
	require.NoError(t, err)
	defer f.Close()
	same, restore := pollable(f)
	defer restore()
	assert.Same(t, f, same, "a file is written as it is")
}

// A write blocked on a full stdout (the client has stopped reading) fails at once when the
// writes are cut, whether the caller writes itself (a polled pipe) or hands the message to
// the writing goroutine (a writer nothing can interrupt).
func TestACutEndsAWriteBlockedOnAFullStdout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pipe   func(t *testing.T) (io.Reader, io.Writer)
		direct bool
	}{
		{"polled pipe", func(t *testing.T) (io.Reader, io.Writer) {
			r, w := blockingPipe(t)
			out, restore := pollable(w)
			t.Cleanup(restore)
			return r, out
		}, true},
		{"io.Pipe", func(t *testing.T) (io.Reader, io.Writer) {
			r, w := io.Pipe()
			t.Cleanup(func() { _ = r.Close() })
			return r, w
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, out := tc.pipe(t)
			in, inW := io.Pipe()
			defer inW.Close()
			tr := &lineTransport{in: in, out: out, maxFrame: maxFrameBytes, log: slog.New(slog.DiscardHandler)}
			conn, err := tr.Connect(context.Background())
			require.NoError(t, err)
			c := conn.(*lineConn)
			assert.Equal(t, tc.direct, c.direct != nil, "written by the caller itself")

			big := []byte(strings.Repeat("x", 4<<20)) // far more than a pipe holds
			blocked := make(chan error, 1)
			go func() { blocked <- c.writeLine(context.Background(), big) }()
			// The first byte read shows the write under way; it then blocks, nobody reading.
			_, err = io.ReadFull(client, make([]byte, 1))
			require.NoError(t, err)

			waiting, cancel := context.WithCancel(context.Background())
			second := make(chan error, 1)
			go func() { second <- c.writeLine(waiting, []byte(`{"second":true}`)) }()
			cancel()
			select {
			case err := <-second:
				assert.ErrorIs(t, err, context.Canceled, "a write waiting its turn ends with its context")
			case <-time.After(failsafe):
				t.Fatal("a write waiting behind a blocked one did not end with its context")
			}

			require.NoError(t, conn.Close())
			select {
			case err := <-blocked:
				assert.ErrorIs(t, err, errWritesCut)
			case <-time.After(failsafe):
				t.Fatal("the blocked write did not fail at the cut")
			}
			assert.ErrorIs(t, c.writeLine(context.Background(), []byte(`{}`)), errWritesCut)
		})
	}
}
