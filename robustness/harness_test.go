package robustness

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/store/natsstore/natstest"
)

// The parts of the suite, really started: a NATS cluster of three servers in this process
// (each restartable on its own ports and data directory), a toxiproxy proxy between every
// elicitd node and every NATS server, and elicitd nodes as processes of the binary built
// here.

var (
	duration = flag.Duration("robustness.duration", 0, "run the long profile for this long (faults at random) instead of the short one")
	only     = flag.String("robustness.faults", "", "inject only these faults (comma-separated names); all by default")
)

// bin is the elicitd binary, built once.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "elicitd-robustness")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "elicitd")
	if len(raceBuild) > 0 {
		os.Setenv("GORACE", "atexit_sleep_ms=0") // a race-detecting binary would sleep 1 s at exit
	}
	args := append(append([]string{"build"}, raceBuild...), "-o", bin, "github.com/elicitd/elicitd/cmd/elicitd")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building elicitd: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(toxiproxyStubs, toxiproxyReaders); err != nil {
			fmt.Fprintf(os.Stderr, "leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// toxiproxyStubs: toxiproxy v2.5.0 leaves a link's noop stub blocked on its output when a
// toxic is taken off a link whose connection has closed meanwhile (toxics/noop.go); the
// goroutine is the library's, holds no resource of ours, and is not a leak of the code under
// test. Everything else is checked.
var toxiproxyStubs = goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe")

// toxiproxyReaders: in the same way, a link whose toxics were reset while data was in
// flight can leave its reader (ToxicLink.read, copying from the proxied TCP connection)
// blocked on its first toxic's channel, which nobody reads any more (stream/io_chan.go).
// A 10-minute run left one; it is the library's goroutine on the library's connection.
var toxiproxyReaders = goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write")

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// natsCluster is three NATS servers with JetStream, routed to each other, each of which
// can be stopped and started again on the same ports and files.
type natsCluster struct {
	t       testing.TB
	mu      sync.Mutex
	opts    []func() *natsserver.Options
	servers []*natsserver.Server // nil: stopped
}

func startNATS(t testing.TB, n int) *natsCluster {
	t.Helper()
	c := &natsCluster{t: t, servers: make([]*natsserver.Server, n)}
	clientPorts, routePorts := make([]int, n), make([]int, n)
	var routes []string
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
	}
	for i := range n {
		dir := t.TempDir()
		c.opts = append(c.opts, func() *natsserver.Options {
			return &natsserver.Options{
				ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: clientPorts[i], NoSigs: true,
				JetStream: true, StoreDir: dir, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 4 << 30,
				// NoAdvertise: a node reaches NATS only through its proxies, never
				// around them on an address a server advertised.
				Cluster: natsserver.ClusterOpts{Name: "robustness", Host: "127.0.0.1", Port: routePorts[i], NoAdvertise: true},
				Routes:  natsserver.RoutesFromStr(strings.Join(routes, ",")),
			}
		})
	}
	for i := range n {
		c.start(i)
	}
	require.Eventually(t, func() bool { return c.metaLeader() >= 0 }, 60*time.Second, 50*time.Millisecond, "a JetStream meta leader")
	// The nodes' R3 buckets need every server known to the meta leader: a node started a
	// moment too soon exits ("no suitable peers for placement"), and is not started again.
	var urls []string
	for i := range n {
		urls = append(urls, "nats://"+c.addr(i))
	}
	natstest.WaitPlaceable(t, urls, n)
	t.Cleanup(func() {
		for i := range n {
			c.stop(i)
		}
	})
	return c
}

func (c *natsCluster) addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", c.opts[i]().Port) }

// start starts server i (again).
func (c *natsCluster) start(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers[i] != nil {
		return
	}
	s, err := natsserver.NewServer(c.opts[i]())
	require.NoError(c.t, err)
	s.Start()
	require.True(c.t, s.ReadyForConnections(60*time.Second), "NATS server %d starts", i+1)
	c.servers[i] = s
}

// stop stops server i at once: its clients' connections drop.
func (c *natsCluster) stop(i int) {
	c.mu.Lock()
	s := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

func (c *natsCluster) metaLeader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil && s.Running() && s.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// recordsLeader returns the server leading the records' stream, or -1.
func (c *natsCluster) recordsLeader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s != nil && s.Running() && s.JetStreamIsStreamLeader(natsserver.DEFAULT_GLOBAL_ACCOUNT, "KV_elicitd") {
			return i
		}
	}
	return -1
}

// proxies are the TCP proxies between the elicitd nodes and the NATS servers: links[i][j]
// carries node i's connection to server j.
type proxies struct {
	links [][]*toxiproxy.Proxy
}

func startProxies(t testing.TB, nodes int, nc *natsCluster) *proxies {
	t.Helper()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := &proxies{}
	for i := range nodes {
		var row []*toxiproxy.Proxy
		for j := range nc.opts {
			px := toxiproxy.NewProxy(api, fmt.Sprintf("node%d-nats%d", i, j), "127.0.0.1:0", nc.addr(j))
			require.NoError(t, px.Start())
			row = append(row, px)
		}
		p.links = append(p.links, row)
	}
	t.Cleanup(func() {
		for _, row := range p.links {
			for _, px := range row {
				px.Stop()
			}
		}
	})
	return p
}

// store is the --store value of node i: its own proxies.
func (p *proxies) store(i int) string {
	var urls []string
	for _, px := range p.links[i] {
		urls = append(urls, "nats://"+px.Listen)
	}
	return strings.Join(urls, ",")
}

// toxic adds a toxic (toxiproxy's JSON) to every link of node i, both ways.
func (p *proxies) toxic(t testing.TB, i int, kind string, attrs string) {
	for _, px := range p.links[i] {
		for _, stream := range []string{"upstream", "downstream"} {
			_, err := px.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
				`{"name":%q,"type":%q,"stream":%q,"attributes":%s}`, kind+"_"+stream, kind, stream, attrs)))
			require.NoError(t, err)
		}
	}
}

// drop closes node i's links, once its process has exited: its connections end as the
// kernel ends a dead process's sockets. Through toxiproxy they may not: a link whose toxics
// were reset with data in flight (toxiproxyReaders) stays open to NATS, which then keeps
// the dead node's subscriptions until its writes to them time out, and the survivors' pings
// to the node hear no "no responders" (a 10-minute run saw a killed node's question found
// 33 s late, 4 s after its link's latency came off). The proxies listen again at once.
func (p *proxies) drop(t testing.TB, i int) {
	for _, px := range p.links[i] {
		px.Stop()
		require.NoError(t, px.Start())
	}
}

// heal takes every toxic off node i's links.
func (p *proxies) heal(i int) {
	for _, px := range p.links[i] {
		px.Toxics.ResetToxics(context.Background())
	}
}

// node is one elicitd process, started again on the same address after a fault.
type node struct {
	i      int
	addr   string
	args   []string
	env    []string
	logf   *os.File
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
	routed atomic.Bool    // the load balancer sends to it: its /readyz answers
	frozen [][2]time.Time // when it was stopped (SIGSTOP) and let go on (SIGCONT), n.mu held
	gone   []time.Time    // when its process was told to end (SIGKILL, SIGTERM), n.mu held
}

// end signals the node's process to end (SIGKILL or SIGTERM), and notes when.
func (n *node) end(sig syscall.Signal) {
	n.mu.Lock()
	n.gone = append(n.gone, time.Now())
	n.mu.Unlock()
	n.signal(sig)
}

// goneAfter returns when node i's process was first told to end at or after at.
func (c *cluster) goneAfter(i int, at time.Time) (time.Time, bool) {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, g := range n.gone {
		if !g.Before(at) {
			return g, true
		}
	}
	return time.Time{}, false
}

// froze notes that the node was frozen from from to until.
func (n *node) froze(from, until time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.frozen = append(n.frozen, [2]time.Time{from, until})
}

// back returns when node i came back from a freeze that held it within the 10 s before at
// (a cut the freeze caused comes up to the balancer's 8 s after it began), or the zero time.
func (c *cluster) back(i int, at time.Time) time.Time {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	var thawed time.Time
	for _, f := range n.frozen {
		if f[0].Before(at) && f[1].After(at.Add(-10*time.Second)) && f[1].After(thawed) {
			thawed = f[1]
		}
	}
	return thawed
}

var listening = regexp.MustCompile(`serving MCP over Streamable HTTP.*address=(\S+)`)

func newNode(t testing.TB, i int, args, env []string) *node {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("node%d.log", i)))
	require.NoError(t, err)
	n := &node{i: i, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), args: args, env: env, logf: f}
	n.start(t)
	t.Cleanup(func() {
		n.signal(syscall.SIGCONT)
		n.signal(syscall.SIGKILL)
		n.wait(10 * time.Second)
		f.Close()
	})
	return n
}

func (n *node) url() string { return "http://" + n.addr + "/mcp" }

// start starts the node's process and waits until it serves. A node that cannot reach its
// store at start exits 2 (NATS without a quorum, say): it is started again, as a supervisor
// (systemd's Restart=on-failure, Kubernetes) would, for up to a minute.
func (n *node) start(t testing.TB) {
	t.Helper()
	for end := time.Now().Add(time.Minute); ; {
		err := n.try(t)
		if err == nil {
			return
		}
		if time.Now().After(end) || !strings.Contains(err.Error(), "store: unavailable") {
			t.Fatalf("node %d: %v", n.i, err)
		}
		time.Sleep(time.Second)
	}
}

// try starts the node's process once and waits until it serves.
func (n *node) try(t testing.TB) error {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--http", n.addr}, n.args...)...)
	cmd.Env = append(os.Environ(), n.env...)
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(n.logf, pw)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		_ = pw.Close()
	}()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if listening.MatchString(sc.Text()) {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case <-ready:
	case err := <-exited:
		return fmt.Errorf("exited before serving: %v\n%s", err, tail(n.log(), 5))
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("did not serve within 60 s:\n%s", n.log())
	}
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	return nil
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Signal(sig)
	}
}

// wait waits for the process to exit; false if it did not within d.
func (n *node) wait(d time.Duration) bool {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case err := <-exited:
		exited <- err
		return true
	case <-time.After(d):
		return false
	}
}

// log is what the node's processes have written so far.
func (n *node) log() string {
	b, _ := os.ReadFile(n.logf.Name())
	return string(b)
}
