//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// machineCPUs is how many CPUs each machine BenchmarkMachines emulates may use.
var machineCPUs = flag.Float64("machines.cpus", 0.3, "BenchmarkMachines: the CPUs each emulated machine may use")

// BenchmarkMachines measures what BenchmarkStoreCalls cannot on one small computer: a
// 3-node cluster whose nodes each have a machine of their own, against one node on one
// such machine. Each machine is a cgroup with a CPU quota of -machines.cpus (0.3 unless set:
// on two cores, what leaves the clients room; newMachine says the period):
//   - the "memory" machine runs one elicitd with --store memory;
//   - each of three cluster machines runs a NATS server (a process of its own, natsChild,
//     routed to the other two, JetStream on) and an elicitd node with --store on the
//     cluster and --store-replicas 3.
//
// The clients, in this process, are on no machine: 16 goroutines make whole 2026-07-28
// calls of ask_user (storeCallsRun), the runs taking turns in batches (interleave):
//   - "memory": to the memory node;
//   - "spread": each request to the next node in turn (spreadSession), so that every retry
//     wakes its call on a node that did not ask it;
//   - "sticky": each client session held by one node, as a balancer with affinity would.
//
// It reports the calls/s of each; spread/memory and sticky/memory, the cluster's
// throughput as a fraction of one node's; the CPU each used per call (all the processes of
// its machines); the NATS servers' share of the cluster's CPU; and how many periods each
// machine spent at its quota (throttled): a figure near zero would mean the quota did not
// bind, and the machines were not what was measured. A machine at its quota stops for the
// rest of the period, where a slower machine of its own would go on slowly: the waits that
// adds fall most on a call whose requests cross machines, as spread's do.
//
// It needs a writable cgroup CPU controller (v2, or v1's cpu hierarchy): root, on Linux;
// without one it is skipped. The three cluster machines must leave the clients half a CPU
// at the least.
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkMachines -benchtime 1500x
func BenchmarkMachines(b *testing.B) {
	const conc = 16
	if cpus := float64(runtime.NumCPU()); 3**machineCPUs > cpus-0.5 {
		b.Fatalf("-machines.cpus %.2f: three machines would take %.2f of this computer's %.0f CPUs, and leave the clients too little", *machineCPUs, 3**machineCPUs, cpus)
	}
	common := []string{"--rate", "0", "--max-live", "100000", "--log-level", "error"}
	memMachine := newMachine(b, "memory", *machineCPUs)
	mem := startQuiet(b, slices.Concat(common, []string{"--store", "memory"}))
	memMachine.add(b, mem.cmd.Process.Pid)

	var machines []*machine
	for i := range 3 {
		machines = append(machines, newMachine(b, fmt.Sprintf("node%d", i+1), *machineCPUs))
	}
	urls, natsCmds := natsProcesses(b, len(machines), func(i, pid int) { machines[i].add(b, pid) })
	var natsPids []int
	for _, c := range natsCmds {
		natsPids = append(natsPids, c.Process.Pid)
	}
	var nodes []*httpServer
	pids := natsPids
	for i, m := range machines {
		// Each node's own server first: the one on its machine.
		store := strings.Join(append([]string{urls[i]}, slices.Delete(slices.Clone(urls), i, i+1)...), ",")
		n := startQuiet(b, slices.Concat(common, []string{"--store", store, "--store-replicas", "3"}))
		m.add(b, n.cmd.Process.Pid)
		nodes = append(nodes, n)
		pids = append(pids, n.cmd.Process.Pid)
	}

	memRun := storeCallsRun(b, "memory", func() *mcp.ClientSession { return pullSession(b, mem) }, conc)
	memRun.cpu = func() time.Duration { return processCPU(mem.cmd.Process.Pid) }
	spreadRun := storeCallsRun(b, "spread", func() *mcp.ClientSession { return spreadSession(b, nodes) }, conc)
	spreadRun.cpu = func() time.Duration { return cpuOf(pids) }
	k := 0
	stickyRun := storeCallsRun(b, "sticky", func() *mcp.ClientSession { k++; return pullSession(b, nodes[k%len(nodes)]) }, conc)
	stickyRun.cpu = spreadRun.cpu
	runs := []*implRun{memRun, spreadRun, stickyRun}
	for _, r := range runs {
		for range 2 * conc { // connections, and the first calls' warm-up, before the clock
			if err := r.call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	memThrottled0, clusterThrottled0 := memMachine.throttled(b), throttled(b, machines)
	natsCPU0, clusterCPU0 := cpuOf(natsPids), cpuOf(pids)
	rate := interleave(b, runs, conc)
	memThrottled, clusterThrottled := memMachine.throttled(b)-memThrottled0, throttled(b, machines)-clusterThrottled0
	// Of the cluster's CPU (spread and sticky alike), the NATS servers' share.
	b.ReportMetric(float64(cpuOf(natsPids)-natsCPU0)/float64(cpuOf(pids)-clusterCPU0), "cluster-nats-cpu-share")
	b.ReportMetric(rate["spread"]/rate["memory"], "spread/memory")
	b.ReportMetric(rate["sticky"]/rate["memory"], "sticky/memory")
	b.ReportMetric(float64(memThrottled), "memory-throttled-periods")
	b.ReportMetric(float64(clusterThrottled)/float64(len(machines)), "cluster-throttled-periods/machine")
	b.Logf("machines of %.2f CPUs, c%d, %d calls each: one node, memory store %6.0f calls/s | three nodes, R3: calls spread %6.0f calls/s (%.2fx), sticky %6.0f calls/s (%.2fx); periods throttled: memory %d, cluster %d per machine",
		*machineCPUs, conc, b.N, rate["memory"], rate["spread"], rate["spread"]/rate["memory"], rate["sticky"], rate["sticky"]/rate["memory"],
		memThrottled, clusterThrottled/int64(len(machines)))
}

// cpuOf is the CPU time processes pids have used so far.
func cpuOf(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		sum += processCPU(p)
	}
	return sum
}

// machine is a cgroup with a CPU quota: what BenchmarkMachines runs a machine's processes in.
type machine struct {
	dir string
	v2  bool
}

// newMachine makes a cgroup that may use cpus CPUs, and removes it when b ends, after the
// processes in it (started later, so stopped first). Its quota is 1 ms of CPU, the least a
// cgroup may have, in a period as short as that allows: a request that finds its machine
// throttled waits the rest of the period, which a machine of its own would not.
func newMachine(b *testing.B, name string, cpus float64) *machine {
	b.Helper()
	if cpus < 0.01 || cpus > 1 {
		b.Fatalf("-machines.cpus %.3f: want 0.01 to 1", cpus)
	}
	const quota = 1000 // µs
	period := int(quota / cpus)
	name = fmt.Sprintf("elicitd-bench-%d-%s", os.Getpid(), name)
	m := &machine{}
	var files [][2]string
	if c, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && slices.Contains(strings.Fields(string(c)), "cpu") {
		m.dir, m.v2 = filepath.Join("/sys/fs/cgroup", name), true
		files = [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota, period)}}
	} else {
		m.dir = filepath.Join("/sys/fs/cgroup/cpu", name)
		files = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(period)}, {"cpu.cfs_quota_us", strconv.Itoa(quota)}}
	}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		// A precondition of the machine it runs on, as a benchmark needing a tool would:
		// `-bench .` without root goes on with the others.
		b.Skipf("BenchmarkMachines emulates machines with cgroup CPU quotas, and needs a writable cgroup CPU controller (root, on Linux): %v", err)
	}
	b.Cleanup(func() {
		if err := os.Remove(m.dir); err != nil {
			b.Errorf("removing the cgroup of machine %s: %v", name, err)
		}
	})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(m.dir, f[0]), []byte(f[1]), 0o644); err != nil {
			// A cgroup made, but without the CPU controller (not enabled for its parent).
			b.Skipf("BenchmarkMachines needs the cgroup CPU controller: machine %s: %s: %v", name, f[0], err)
		}
	}
	return m
}

// add moves process pid, all of its threads, into m.
func (m *machine) add(b *testing.B, pid int) {
	b.Helper()
	if err := os.WriteFile(filepath.Join(m.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		b.Fatalf("moving process %d to %s: %v", pid, m.dir, err)
	}
}

// throttled is how many periods m has spent at its quota so far.
func (m *machine) throttled(b *testing.B) int64 {
	b.Helper()
	stat, err := os.ReadFile(filepath.Join(m.dir, "cpu.stat"))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(stat)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "nr_throttled "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("%s/cpu.stat: %q", m.dir, line)
			}
			return n
		}
	}
	b.Fatalf("%s/cpu.stat has no nr_throttled:\n%s", m.dir, stat)
	return 0
}

// throttled is the periods all of ms have spent at their quotas so far.
func throttled(b *testing.B, ms []*machine) int64 {
	var n int64
	for _, m := range ms {
		n += m.throttled(b)
	}
	return n
}
