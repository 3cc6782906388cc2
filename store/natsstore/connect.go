package natsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/elicitd/elicitd/store"
)

// ConnectOptions say how to reach an external NATS server or cluster.
type ConnectOptions struct {
	// URLs of the servers ("nats://host:4222"); one is enough, the others are learned.
	URLs []string
	// User and Password, or CredsFile (a .creds file: JWT and NKey seed), if the server
	// asks for them.
	User, Password string
	CredsFile      string
	// TLSCA is a PEM file of the CAs to trust the servers' certificates by (tls:// URLs).
	TLSCA string
	// Name is the connection's name, as the server shows it: "elicitd" by default.
	Name string
	// Timeout bounds the first connection: 5 s by default.
	Timeout time.Duration
}

// Connect connects to an external NATS server or cluster and opens the store on it.
// Closing the store closes the connection. Its errors name the problem: no server
// reachable, credentials refused, a TLS failure, no JetStream.
func Connect(ctx context.Context, co ConnectOptions, o Options) (*Store, error) {
	if len(co.URLs) == 0 {
		return nil, errors.New("store: no NATS server URL")
	}
	for _, f := range []struct{ what, path string }{{"credentials file", co.CredsFile}, {"TLS CA file", co.TLSCA}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("store: the NATS %s: %w", f.what, err)
		}
	}
	name := co.Name
	if name == "" {
		name = "elicitd"
	}
	opts := ClientOptions(name)
	if co.Timeout > 0 {
		opts = append(opts, nats.Timeout(co.Timeout))
	} else {
		opts = append(opts, nats.Timeout(5*time.Second))
	}
	if co.User != "" || co.Password != "" {
		opts = append(opts, nats.UserInfo(co.User, co.Password))
	}
	if co.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(co.CredsFile))
	}
	if co.TLSCA != "" {
		opts = append(opts, nats.RootCAs(co.TLSCA))
	}
	urls := strings.Join(co.URLs, ",")
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, connectError(urls, err)
	}
	s, err := Open(ctx, nc, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	s.owned = append(s.owned, nc.Close)
	return s, nil
}

// connectError words a failed first connection.
func connectError(urls string, err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		return fmt.Errorf("store: NATS at %s refused the credentials: %v", urls, err)
	case errors.Is(err, nats.ErrSecureConnRequired), errors.Is(err, nats.ErrSecureConnWanted), errors.Is(err, nats.ErrTLS),
		strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return fmt.Errorf("store: TLS with NATS at %s failed: %v", urls, err)
	}
	return fmt.Errorf("%w: cannot reach NATS at %s: %v", store.ErrUnavailable, urls, err)
}
