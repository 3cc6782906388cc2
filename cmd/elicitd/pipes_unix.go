//go:build unix

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pollable returns f as a file the runtime polls when f is a pipe or a socket, as an MCP
// client's stdin and stdout are: a duplicate of its descriptor in non-blocking mode. Its reads
// and writes then park their goroutine instead of holding an operating-system thread in a
// system call (with one P, stdioProcs, a read waiting on stdin would hold the only P until
// the runtime's monitor took it back), and a deadline interrupts them (see lineConn.direct).
//
// restore closes the duplicate first, which ends a read or write parked on it (none can be
// left in a system call: the mode is still non-blocking), then puts back the blocking mode if
// f had it: the flag belongs to the pipe's open file, which the process's own descriptor
// shares, and so may another process that inherited it. Stdin and stdout that are one socket
// are made non-blocking once, by the first, whose restore puts the mode back; run the
// restores in the reverse order of the calls. Anything else (a terminal, a file) comes back
// as it is.
func pollable(f *os.File) (p *os.File, restore func()) {
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, func() {}
	}
	orig := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(orig), unix.F_GETFL, 0)
	if err != nil {
		return f, func() {}
	}
	wasNonblock := flags&unix.O_NONBLOCK != 0
	fd, err := syscall.Dup(orig)
	if err != nil {
		return f, func() {}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return f, func() {}
	}
	p = os.NewFile(uintptr(fd), f.Name())
	return p, func() {
		_ = p.Close()
		if !wasNonblock {
			_ = syscall.SetNonblock(orig, false)
		}
	}
}
