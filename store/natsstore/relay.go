package natsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/elicitd/elicitd/store"
)

// Shared keeps value under the key cfg.<name> unless one is kept there (kv.Create fails
// on an existing key), and returns the one kept. The key has no TTL: it never expires.
func (s *Store) Shared(ctx context.Context, name string, value []byte) ([]byte, error) {
	if !store.ValidID(name) {
		return nil, fmt.Errorf("%w: shared value name %q", store.ErrInvalid, name)
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	key := "cfg." + name
	_, err = s.kv.Create(ctx, key, value)
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("store: keep %s: %w", name, classify(err))
	}
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", name, classify(err))
	}
	return e.Value(), nil
}

// relaySubject is the core NATS subject node's requests go to.
func (s *Store) relaySubject(node string) string { return "elicitd." + s.o.Bucket + ".node." + node }

// Serve answers node's requests (core NATS request/reply on one subject per node) with h,
// each on a goroutine of its own, until stop.
func (s *Store) Serve(node string, h func(context.Context, []byte) []byte) (func(), error) {
	if !store.ValidID(node) {
		return nil, fmt.Errorf("%w: node name %q", store.ErrInvalid, node)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := s.nc.Subscribe(s.relaySubject(node), func(m *nats.Msg) {
		go func() {
			if out := h(ctx, m.Data); m.Reply != "" {
				_ = m.Respond(out)
			}
		}()
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: serve node %s: %v", store.ErrUnavailable, node, err)
	}
	// The subscription is live at the server before Serve returns: a request sent next
	// must not be told there is no such node.
	if err := s.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		cancel()
		return nil, fmt.Errorf("%w: serve node %s: %v", store.ErrUnavailable, node, err)
	}
	return func() {
		_ = sub.Unsubscribe()
		cancel()
	}, nil
}

// Send sends msg to node and waits for its answer until ctx ends (bounded by
// Options.OpTimeout if ctx has no deadline). No responders is store.ErrNoNode.
func (s *Store) Send(ctx context.Context, node string, msg []byte) ([]byte, error) {
	if !store.ValidID(node) {
		return nil, fmt.Errorf("%w: node name %q", store.ErrInvalid, node)
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	m, err := s.nc.RequestWithContext(ctx, s.relaySubject(node), msg)
	switch {
	case err == nil:
		return m.Data, nil
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w: %s", store.ErrNoNode, node)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil, err
	}
	return nil, fmt.Errorf("%w: send to node %s: %v", store.ErrUnavailable, node, err)
}

// Notify publishes msg to node's subject: core NATS, no reply subject, so Serve's handler
// answers nothing.
func (s *Store) Notify(node string, msg []byte) error {
	if !store.ValidID(node) {
		return fmt.Errorf("%w: node name %q", store.ErrInvalid, node)
	}
	if err := s.nc.Publish(s.relaySubject(node), msg); err != nil {
		return fmt.Errorf("%w: notify node %s: %v", store.ErrUnavailable, node, err)
	}
	return nil
}

var (
	_ store.Relay    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)
