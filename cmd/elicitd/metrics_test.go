package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetricsListenTakesOnlyLoopbackOrPrivateAddresses(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:9090": true, "localhost:9090": true, "[::1]:9090": true,
		"10.0.0.5:9090": true, "172.16.3.4:9090": true, "192.168.1.2:9090": true, "[fd00::1]:9090": true,
		":9090": false, "0.0.0.0:9090": false, "8.8.8.8:9090": false, "metrics.example.com:9090": false,
		"[2001:db8::1]:9090": false, "127.0.0.1": false,
	} {
		err := checkMetricsAddr(addr)
		assert.Equal(t, ok, err == nil, "%s: %v", addr, err)
	}
}

func TestMetricsListenOnAPublicAddressExitsTwoWithOneLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ args, env []string }{
		{args: []string{"--metrics-listen", "0.0.0.0:9090"}},
		{env: []string{"ELICITD_METRICS_LISTEN=:9090"}},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(cmd.Environ(), c.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		var ee *exec.ExitError
		require.ErrorAs(t, cmd.Run(), &ee)
		assert.Equal(t, 2, ee.ExitCode())
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
		assert.Regexp(t, `^elicitd: (--metrics-listen|ELICITD_METRICS_LISTEN) must be a loopback or private address`, stderr.String())
	}
}
