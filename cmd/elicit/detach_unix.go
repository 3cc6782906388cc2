//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach starts the server in a session of its own, without a controlling terminal: it talks
// over its pipes and has no business with the person's terminal, and a Ctrl-C there is
// elicit's to handle (it closes the session, and the server sees its stdin end).
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
