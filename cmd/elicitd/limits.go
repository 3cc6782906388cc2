package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// What a question costs a node, as measured (docs/settings.md): awake, an actor and its
// handler's goroutine, about 27 KB; hibernating, its stand-in and timer, about 0.9 KB of
// live heap, and 1.5 KB of the process's RSS with the heap's growth between collections
// (1,462 B a task at 1,000,000, BenchmarkWaitingQuestions). The automatic caps budget that.
const (
	awakeBytes  = 32 << 10
	asleepBytes = 3 << 9 // 1.5 KiB
)

// readSystemFile reads what autoMemoryLimit looks at; tests replace it.
var readSystemFile = os.ReadFile

// autoMemoryLimit is --memory-limit's auto: three quarters of the cgroup's memory limit
// (cgroupLimit) or of the machine's memory (MemTotal), whichever is smaller, which leaves
// room for what the runtime does not count (stacks in use, the store's pages); without a
// cgroup limit a quarter of the machine's memory; else 256 MiB. At least 64 MiB.
func autoMemoryLimit(read func(string) ([]byte, error)) int64 {
	const floor, fallback = 64 << 20, 256 << 20
	group := cgroupLimit(read)
	machine := memTotal(read)
	switch {
	case group > 0 && machine > 0:
		return max(min(group, machine)/4*3, floor)
	case group > 0:
		return max(group/4*3, floor)
	case machine > 0:
		return max(machine/4, floor)
	}
	return fallback
}

// cgroupLimit is the smallest memory limit on this process's cgroup and the cgroups above
// it, as /proc/self/cgroup names them: cgroup v2's memory.max, v1's memory.limit_in_bytes
// (a systemd unit's MemoryMax=, or a container's limit, seen from inside it or not); 0 if
// none is set.
func cgroupLimit(read func(string) ([]byte, error)) int64 {
	files := []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
	if b, err := read("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			// "0::/path" (v2), or "N:memory,...:/path" (v1).
			f := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
				continue
			}
			dir, file := "/sys/fs/cgroup", "memory.max"
			if f[0] != "0" {
				if !slices.Contains(strings.Split(f[1], ","), "memory") {
					continue
				}
				dir, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
			}
			for p := path.Clean(f[2]); p != "/" && p != "."; p = path.Dir(p) {
				files = append(files, dir+p+"/"+file)
			}
		}
	}
	var least int64
	for _, f := range files {
		b, err := read(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			continue // "max", or v1's "no limit" (a page-rounded MaxInt64)
		}
		if least == 0 || n < least {
			least = n
		}
	}
	return least
}

// memTotal is the machine's memory as /proc/meminfo says, or 0.
func memTotal(read func(string) ([]byte, error)) int64 {
	b, err := read("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return 0
}

// settleCaps sets --max-live and --max-asleep where they are auto, from limit, the memory
// limit in force: an eighth of it for the questions awake, three quarters for those asleep
// (a node that holds many holds mostly them: 1,048,576 under 2 GiB).
func (c *config) settleCaps(limit int64) {
	if limit <= 0 || limit == math.MaxInt64 {
		limit = c.memoryLimit // GOMEMLIMIT=off: the setting's own figure
	}
	if c.maxLive == 0 {
		c.maxLive = int(min(max(limit/8/awakeBytes, 100), 10_000_000))
	}
	if c.maxAsleep == 0 {
		c.maxAsleep = int(min(max(limit/4*3/asleepBytes, 1000), 100_000_000))
	}
}
