package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
)

// storeConfig says where 2026-07-28 questions are kept (see docs/cluster.md).
type storeConfig struct {
	kind     string   // "memory", "embedded" or "nats"; "" until parsed: the default for the transport
	urls     []string // nats: the servers
	dataDir  string   // embedded: JetStream's files
	listen   string   // embedded: accept NATS clients here ("" : none)
	replicas int      // nats: servers keeping each bucket
	maxBytes int64    // embedded, nats: all records together (store.Limits.MaxBytes)
	user     string   // nats
	password string   // nats, from the environment only
	creds    string   // nats: a .creds file
	ca       string   // nats: a PEM file of CAs, for tls:// servers
}

// parseStore reads --store.
func (s *storeConfig) parseStore(v string) error {
	switch v = strings.TrimSpace(v); {
	case v == "" || v == "memory" || v == "embedded":
		s.kind = v
	case strings.HasPrefix(v, "nats://") || strings.HasPrefix(v, "tls://"):
		s.kind = "nats"
		s.urls = nil
		for _, u := range splitList(v) {
			if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
				u = "nats://" + u
			}
			host := u[strings.Index(u, "://")+3:]
			if _, _, err := net.SplitHostPort(host); err != nil {
				return fmt.Errorf("must be memory, embedded or nats://HOST:PORT[,HOST:PORT...], got %q (%s has no port)", v, u)
			}
			s.urls = append(s.urls, u)
		}
	default:
		return fmt.Errorf("must be memory, embedded or nats://HOST:PORT[,HOST:PORT...], got %q", v)
	}
	return nil
}

// defaultDataDir is the per-user directory the embedded store keeps its files in:
// $XDG_DATA_HOME/elicitd (~/.local/share/elicitd) on Linux and the like, ~/Library/Application
// Support/elicitd on macOS, %AppData%\elicitd on Windows.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" && runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		return filepath.Join(d, "elicitd")
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, "elicitd")
		}
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "share", "elicitd")
	}
	return filepath.Join(os.TempDir(), "elicitd-"+fmt.Sprint(os.Getuid()))
}

// settle fills the defaults that depend on the transport: stdio keeps questions in memory
// (its life is the host's session), --http in the embedded store.
func (s *storeConfig) settle(http bool, getenv func(string) string) error {
	if s.kind == "" {
		s.kind = "memory"
		if http {
			s.kind = "embedded"
		}
	}
	if s.dataDir == "" {
		s.dataDir = defaultDataDir(getenv)
	}
	s.password = getenv("ELICITD_NATS_PASSWORD")
	if s.kind != "nats" && (s.user != "" || s.password != "" || s.creds != "" || s.ca != "") {
		return fmt.Errorf("--nats-user, ELICITD_NATS_PASSWORD, --nats-creds and --nats-ca are for --store nats://..., not --store %s", s.kind)
	}
	if s.kind != "embedded" && s.listen != "" {
		return fmt.Errorf("--nats-listen is for --store embedded, not --store %s", s.kind)
	}
	if s.kind == "nats" && s.replicas == 0 {
		s.replicas = 1
	}
	return nil
}

// openStore opens the configured store: nil for memory. Its errors name the setting.
// maxUpload is the largest page request body a node passes on to another through the
// store's files (the page's whole upload budget: no node would take more).
func openStore(ctx context.Context, s storeConfig, maxUpload int64, log *slog.Logger) (store.Store, error) {
	// A record holds a call's answers so far and its last result: up to what one NATS
	// message holds by default (1 MiB), less room for its headers.
	lim := store.Limits{MaxFileBytes: maxUpload, MaxRecordBytes: maxRecordBytes, MaxBytes: s.maxBytes}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	switch s.kind {
	case "embedded":
		st, err := natsstore.Embedded(ctx, natsstore.ServerOptions{Dir: filepath.Join(s.dataDir, "jetstream"), Listen: s.listen, Logger: log},
			natsstore.Options{Limits: lim})
		if err != nil {
			return nil, fmt.Errorf("--store embedded (--data-dir %s): %v", s.dataDir, err)
		}
		return st, nil
	case "nats":
		st, err := natsstore.Connect(ctx, natsstore.ConnectOptions{URLs: s.urls, User: s.user, Password: s.password,
			CredsFile: s.creds, TLSCA: s.ca, Timeout: 5 * time.Second}, natsstore.Options{Replicas: s.replicas, Limits: lim})
		if err != nil {
			return nil, fmt.Errorf("--store %s: %v", strings.Join(s.urls, ","), err)
		}
		return st, nil
	}
	return nil, nil
}

// maxRecordBytes is the largest record elicitd writes: NATS's default message limit (1 MiB)
// less room for headers.
const maxRecordBytes = 1<<20 - 8<<10

// stateKeyCheck is what the store keeps to tell whether the nodes sharing it were given the
// same ELICITD_STATE_KEY: a MAC of a fixed text, never the key.
func stateKeyCheck(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("elicitd: the requestState key shared by the nodes of one store"))
	return m.Sum(nil)
}

// sharedStateKey returns the requestState key the nodes sharing st use: the one given (it
// must be the one every other node was given), else the one kept in the store, created by
// the first node to start.
func sharedStateKey(ctx context.Context, st store.Store, given []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	key := given
	if len(key) == 0 {
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh)
		kept, err := st.Shared(ctx, "state-key", fresh)
		if err != nil {
			return nil, fmt.Errorf("the store: %v", err)
		}
		if len(kept) < 32 {
			return nil, fmt.Errorf("the store holds a requestState key of %d bytes; want 32", len(kept))
		}
		key = kept
	}
	// The first node to start keeps a check of its key; every other must have the same.
	check := stateKeyCheck(key)
	kept, err := st.Shared(ctx, "state-key-check", check)
	if err != nil {
		return nil, fmt.Errorf("the store: %v", err)
	}
	if !hmac.Equal(kept, check) {
		if len(given) == 0 {
			return nil, errors.New("ELICITD_STATE_KEY: the other nodes sharing this store were given one; give this node the same")
		}
		return nil, errors.New("ELICITD_STATE_KEY differs from the key the other nodes sharing this store use: give every node the same key")
	}
	return key, nil
}
