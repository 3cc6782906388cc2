package main

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// files is a machine's files as autoMemoryLimit reads them.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if v, ok := m[p]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestTheMemoryLimitFollowsTheMachine(t *testing.T) {
	const meminfo = "MemTotal:        8000000 kB\nMemFree:         1000 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"a cgroup v2 limit", map[string]string{"/sys/fs/cgroup/memory.max": "1073741824\n", "/proc/meminfo": meminfo}, 768 << 20},
		{"v2 without a limit: the machine's memory", map[string]string{"/sys/fs/cgroup/memory.max": "max\n", "/proc/meminfo": meminfo}, 8000000 << 10 / 4},
		{"a cgroup v1 limit", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n"}, 384 << 20},
		{"v1 without a limit", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n", "/proc/meminfo": meminfo}, 8000000 << 10 / 4},
		{"a tiny container: the floor", map[string]string{"/sys/fs/cgroup/memory.max": "33554432"}, 64 << 20},
		{"a v1 limit above the machine's memory: the machine's", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "68719476736", "/proc/meminfo": meminfo}, 8000000 << 10 / 4 * 3},
		{"a systemd unit's MemoryMax= (v2, no cgroup namespace)", map[string]string{
			"/proc/self/cgroup":                                      "0::/system.slice/elicitd.service\n",
			"/sys/fs/cgroup/system.slice/memory.max":                 "max\n",
			"/sys/fs/cgroup/system.slice/elicitd.service/memory.max": "2147483648\n",
			"/proc/meminfo":                                          meminfo}, 1536 << 20},
		{"a parent's limit, smaller than the process's own", map[string]string{
			"/proc/self/cgroup":             "0::/a/b\n",
			"/sys/fs/cgroup/a/memory.max":   "1073741824\n",
			"/sys/fs/cgroup/a/b/memory.max": "max\n",
			"/proc/meminfo":                 meminfo}, 768 << 20},
		{"a v1 memory hierarchy", map[string]string{
			"/proc/self/cgroup":                                         "9:name=systemd:/\n4:memory:/process_api/x\n3:cpuset:/\n0::/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes":               "9223372036854771712\n",
			"/sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "536870912\n",
			"/proc/meminfo":                                             meminfo}, 384 << 20},
		{"nothing readable", nil, 256 << 20},
		{"unreadable figures", map[string]string{"/sys/fs/cgroup/memory.max": "lots", "/proc/meminfo": "MemTotal: many kB\n"}, 256 << 20},
	} {
		assert.Equal(t, c.want, autoMemoryLimit(files(c.files)), c.name)
	}
}

func TestTheCapsFollowTheMemoryLimitUnlessSet(t *testing.T) {
	old := readSystemFile
	t.Cleanup(func() { readSystemFile = old })
	readSystemFile = files(map[string]string{"/sys/fs/cgroup/memory.max": "1073741824"})
	env := func(string) string { return "" }

	c, err := parseConfig(nil, env, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 768<<20, c.memoryLimit, "three quarters of the container's")
	c.settleCaps(c.memoryLimit)
	assert.Equal(t, 3072, c.maxLive)
	assert.Equal(t, 393216, c.maxAsleep)

	c, err = parseConfig([]string{"--max-live", "5", "--max-asleep", "7", "--memory-limit", "268435456"}, env, nil)
	require.NoError(t, err)
	c.settleCaps(c.memoryLimit)
	assert.Equal(t, 5, c.maxLive)
	assert.Equal(t, 7, c.maxAsleep)
	assert.EqualValues(t, 256<<20, c.memoryLimit)

	// The limit in force (GOMEMLIMIT's, when set) is what the caps follow.
	c, err = parseConfig(nil, env, nil)
	require.NoError(t, err)
	c.settleCaps(512 << 20)
	assert.Equal(t, 2048, c.maxLive)
	assert.Equal(t, 262144, c.maxAsleep)

	// A small container holds fewer uploads at once, under a limit within its memory; uploads
	// asked for raise the limit instead.
	readSystemFile = files(map[string]string{"/sys/fs/cgroup/memory.max": "134217728"})
	c, err = parseConfig(nil, env, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 96<<20, c.memoryLimit, "three quarters of 128 MiB")
	assert.EqualValues(t, 16<<20, c.page.maxHeld, "half of what is left above 64 MiB")
	c, err = parseConfig([]string{"--max-held-upload-bytes", "134217728"}, env, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 192<<20, c.memoryLimit, "128 MiB held, and 64 MiB more")
	assert.EqualValues(t, 128<<20, c.page.maxHeld)
	readSystemFile = files(map[string]string{"/sys/fs/cgroup/memory.max": "67108864"})
	c, err = parseConfig(nil, env, nil)
	require.NoError(t, err)
	assert.EqualValues(t, 1<<20, c.page.maxHeld, "at least 1 MiB")
	assert.EqualValues(t, 65<<20, c.memoryLimit, "and 64 MiB more")

	_, err = parseConfig([]string{"--max-asleep", "lots"}, env, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--max-asleep must be a whole number between 1 and 100000000, got \"lots\", or auto")
}
