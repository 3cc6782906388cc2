package natsstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/elicitd/elicitd/store"
)

// ServerOptions configure an embedded nats-server.
type ServerOptions struct {
	// Dir is where JetStream keeps its files (required); created if missing.
	Dir string
	// Listen, if set ("127.0.0.1:4222", or port 0 for any), has the server accept NATS
	// clients on that address. By default it listens on no network at all: this process
	// reaches it in memory.
	Listen string
	// Name is the server's name: "elicitd" by default.
	Name string
	// MaxStore bounds JetStream's disk use, in bytes; the server's default if 0.
	MaxStore int64
	// Logger gets the server's log (notices at Debug, warnings at Warn, errors at Error);
	// nothing is logged if nil.
	Logger *slog.Logger
	// StartTimeout bounds the start: 10 s by default.
	StartTimeout time.Duration
}

// Server is a nats-server with JetStream running in this process.
type Server struct {
	ns   *server.Server
	log  *serverLog
	lock *flock.Flock // the data directory's, held while the server runs
}

// StartServer starts a nats-server with JetStream on o.Dir. Its errors name the problem: a
// data directory that cannot be created or written, an address that cannot be listened
// on, JetStream that does not start.
func StartServer(o ServerOptions) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("store: the embedded NATS server needs a data directory")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: cannot create the data directory %q: %w", o.Dir, err)
	}
	probe, err := os.CreateTemp(o.Dir, ".elicitd-probe-*")
	if err != nil {
		return nil, fmt.Errorf("store: the data directory %q is not writable: %w", o.Dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	// nats-server itself lets two processes share a store directory, and each would then
	// overwrite the other's files: one server per directory, held by a lock while it runs.
	lock := flock.New(filepath.Join(o.Dir, "elicitd.lock"))
	locked, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("store: cannot lock the data directory %q: %w", o.Dir, err)
	}
	if !locked {
		return nil, fmt.Errorf("store: the data directory %q is in use by another running elicitd; give each process a directory of its own", o.Dir)
	}
	started := false
	defer func() {
		if !started {
			_ = lock.Unlock()
		}
	}()

	opts := &server.Options{
		ServerName:        o.Name,
		JetStream:         true,
		StoreDir:          o.Dir,
		JetStreamMaxStore: o.MaxStore,
		DontListen:        o.Listen == "",
		NoSigs:            true,
	}
	if opts.ServerName == "" {
		opts.ServerName = "elicitd"
	}
	if o.Listen != "" {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("store: the embedded NATS server's address %q: %w", o.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("store: the embedded NATS server's address %q: bad port", o.Listen)
		}
		opts.Host, opts.Port = host, p
		if p == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("store: the embedded NATS server: %w", err)
	}
	sl := &serverLog{log: o.Logger}
	ns.SetLoggerV2(sl, false, false, false)
	ns.Start()
	timeout := o.StartTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if !ns.ReadyForConnections(timeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		if e := sl.lastError(); e != "" {
			return nil, fmt.Errorf("store: the embedded NATS server did not start: %s", e)
		}
		return nil, fmt.Errorf("store: the embedded NATS server did not start within %s", timeout)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		ns.WaitForShutdown()
		why := sl.lastError()
		if why == "" {
			why = "no reason given"
		}
		return nil, fmt.Errorf("store: the embedded NATS server could not start JetStream in %q: %s", o.Dir, why)
	}
	started = true
	return &Server{ns: ns, log: sl, lock: lock}, nil
}

// InProcessConn is a client connection to the server in memory (nats.InProcessServer).
func (s *Server) InProcessConn() (net.Conn, error) { return s.ns.InProcessConn() }

// ClientURL is the server's client URL, if it listens (ServerOptions.Listen).
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// NATS is the server itself.
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and waits until it has.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	_ = s.lock.Unlock()
}

// ClientOptions are the options of a connection the store works best with: it reconnects
// for ever, and buffers nothing while it does (so that calls fail at once with
// store.ErrUnavailable, rather than wait for their timeout).
func ClientOptions(name string) []nats.Option {
	return []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.ReconnectBufSize(-1),
		// A link gone silent (a partition, a blackhole: the TCP connection stays open)
		// is noticed in 4-6 s, and the client reconnects elsewhere; by default the client
		// pings every 2 minutes, and each call on such a link waited out its timeout.
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(2),
	}
}

// Embedded starts a nats-server with JetStream on so.Dir, listening on no network unless
// so.Listen says, and opens the store on it through an in-memory connection. Closing the
// store stops the server.
func Embedded(ctx context.Context, so ServerOptions, o Options) (*Store, error) {
	srv, err := StartServer(so)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect("", append(ClientOptions("elicitd"), nats.InProcessServer(srv))...)
	if err != nil {
		srv.Shutdown()
		return nil, fmt.Errorf("%w: cannot connect to the embedded NATS server: %v", store.ErrUnavailable, err)
	}
	s, err := Open(ctx, nc, o)
	if err != nil {
		nc.Close()
		srv.Shutdown()
		return nil, err
	}
	s.owned = append(s.owned, nc.Close, srv.Shutdown)
	return s, nil
}

// serverLog is the embedded server's logger: to an slog.Logger if any, and it keeps the
// last error, to word a failed start.
type serverLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	last string
}

func (l *serverLog) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *serverLog) keep(format string, v []any) {
	l.mu.Lock()
	l.last = fmt.Sprintf(format, v...)
	l.mu.Unlock()
}

func (l *serverLog) emit(level slog.Level, format string, v []any) {
	if l.log != nil {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats-server")
	}
}

func (l *serverLog) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
func (l *serverLog) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l *serverLog) Debugf(string, ...any)           {}
func (l *serverLog) Tracef(string, ...any)           {}

func (l *serverLog) Errorf(format string, v ...any) {
	l.keep(format, v)
	l.emit(slog.LevelError, format, v)
}

func (l *serverLog) Fatalf(format string, v ...any) {
	l.keep(format, v)
	l.emit(slog.LevelError, format, v)
}
