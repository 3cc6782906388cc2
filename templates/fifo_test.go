//go:build unix

package templates_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/templates"
)

// A FIFO, a socket or a device named NAME.json is not a template file: Load skips it rather
// than wait on it for ever.
func TestLoadSkipsWhatIsNotARegularFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"contact.json": contactJSON})
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "x.json"), 0o644))
	set := templates.New()
	done := make(chan error, 1)
	go func() { done <- set.Load(dir) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a failsafe, for a slow, loaded machine
		unblock(dir, "x.json")
		t.Fatal("Load waits on a FIFO")
	}
	assert.Equal(t, []string{"contact"}, set.Names())
}

// unblock opens the FIFO for writing, so that an open for reading stuck on it returns and
// a test that failed ends.
func unblock(dir, name string) {
	if f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
