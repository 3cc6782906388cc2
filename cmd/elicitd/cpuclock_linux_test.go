package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// processCPU, read once a child has exited and before it is reaped, is the CPU time its
// rusage reports: the whole process's, to the microsecond.
func TestProcessCPUIsTheChildsRusage(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	require.NoError(t, cmd.Start())
	var info unix.Siginfo
	require.NoError(t, unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil))
	got := processCPU(cmd.Process.Pid)
	require.NoError(t, cmd.Wait())
	want := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	require.Positive(t, want)
	assert.InDelta(t, want, got, float64(10*time.Microsecond), "rusage %v, clock %v", want, got)
}
