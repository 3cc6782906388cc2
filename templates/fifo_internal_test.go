//go:build unix

package templates

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FIFO put in a file's place after Load looked at it is refused, not waited on.
func TestReadAtMostRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := readAtMost(fifo, 100)
		done <- err
	}()
	select {
	case err := <-done:
		assert.EqualError(t, err, "is not a regular file")
	case <-time.After(30 * time.Second): // a failsafe, for a slow, loaded machine
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close() // the open stuck on it returns, and the test ends
		}
		t.Fatal("readAtMost waits on a FIFO")
	}
}
