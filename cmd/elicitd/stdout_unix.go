//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollableStdout returns f as a writer whose blocked writes a deadline can interrupt (see
// lineConn.direct) when f is a pipe or a socket, as an MCP client's stdout is: a duplicate
// of its descriptor in non-blocking mode, which the runtime polls. restore puts the blocking
// mode back (the flag belongs to the pipe's open file, which the process's own descriptor 1
// shares, and so may another process that inherited it) and closes the duplicate. Anything
// else (a terminal, a file) comes back as it is.
func pollableStdout(f *os.File) (w io.Writer, restore func()) {
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, func() {}
	}
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f, func() {}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return f, func() {}
	}
	dup := os.NewFile(uintptr(fd), f.Name())
	return dup, func() {
		_ = syscall.SetNonblock(fd, false)
		_ = dup.Close()
	}
}
