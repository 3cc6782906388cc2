package memory

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/elicitd/elicitd/store"
)

// Shared keeps value under name unless a value is kept there already, and returns the one
// kept.
func (s *Store) Shared(ctx context.Context, name string, value []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !store.ValidID(name) {
		return nil, fmt.Errorf("%w: shared value name %q", store.ErrInvalid, name)
	}
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.shared == nil {
		s.shared = map[string][]byte{}
	}
	if v, ok := s.shared[name]; ok {
		return bytes.Clone(v), nil
	}
	s.shared[name] = bytes.Clone(value)
	return bytes.Clone(value), nil
}

// Relay is the store.Relay between the nodes of one process that share a memory store
// (several Elicitors in a test). A request runs its node's handler on a goroutine of its
// own, as a NATS relay does.
type Relay struct {
	mu    sync.Mutex
	nodes map[string]*served
}

type served struct {
	h      func(context.Context, []byte) []byte
	ctx    context.Context
	cancel context.CancelFunc
}

var (
	_ store.Relay    = (*Relay)(nil)
	_ store.Notifier = (*Relay)(nil)
)

// Serve has h answer node's requests until stop.
func (r *Relay) Serve(node string, h func(context.Context, []byte) []byte) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = map[string]*served{}
	}
	if _, ok := r.nodes[node]; ok {
		return nil, fmt.Errorf("store: node %q is served already", node)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sv := &served{h: h, ctx: ctx, cancel: cancel}
	r.nodes[node] = sv
	return func() {
		r.mu.Lock()
		if r.nodes[node] == sv {
			delete(r.nodes, node)
		}
		r.mu.Unlock()
		cancel()
	}, nil
}

// Notify runs node's handler with msg on a goroutine of its own, and drops its answer;
// nothing, if nothing serves node.
func (r *Relay) Notify(node string, msg []byte) error {
	r.mu.Lock()
	sv := r.nodes[node]
	r.mu.Unlock()
	if sv != nil {
		msg = bytes.Clone(msg)
		go sv.h(sv.ctx, msg)
	}
	return nil
}

// Send runs node's handler with msg and returns its answer, store.ErrNoNode if nothing
// serves node.
func (r *Relay) Send(ctx context.Context, node string, msg []byte) ([]byte, error) {
	r.mu.Lock()
	sv := r.nodes[node]
	r.mu.Unlock()
	if sv == nil {
		return nil, fmt.Errorf("%w: %s", store.ErrNoNode, node)
	}
	out := make(chan []byte, 1)
	go func() { out <- sv.h(sv.ctx, bytes.Clone(msg)) }()
	select {
	case b := <-out:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
