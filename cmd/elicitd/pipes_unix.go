//go:build unix

package main

import (
	"os"
	"syscall"
)

// pollable returns f as a file the runtime polls when f is a pipe or a socket, as an MCP
// client's stdin and stdout are: a duplicate of its descriptor in non-blocking mode. Its reads
// and writes then park their goroutine instead of holding an operating-system thread in a
// system call (with one P, stdioProcs, a read waiting on stdin would hold the only P until
// the runtime's monitor took it back), and a deadline interrupts them (see lineConn.direct).
// restore puts the blocking mode back (the flag belongs to the pipe's open file, which the
// process's own descriptor shares, and so may another process that inherited it) and closes
// the duplicate. Anything else (a terminal, a file) comes back as it is.
func pollable(f *os.File) (p *os.File, restore func()) {
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
	p = os.NewFile(uintptr(fd), f.Name())
	return p, func() {
		_ = syscall.SetNonblock(fd, false)
		_ = p.Close()
	}
}
