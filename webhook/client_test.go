package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/storetest"
	"github.com/elicitd/elicitd/validator"
	"github.com/elicitd/elicitd/webhook"
)

// counted is a TCP listener on loopback that counts the connections made to it.
type counted struct {
	l        net.Listener
	accepted chan net.Conn
	done     chan struct{}
}

func listenCounted(t *testing.T) *counted {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &counted{l: l, accepted: make(chan net.Conn, 100), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.accepted <- conn
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-c.done
		close(c.accepted)
		for conn := range c.accepted {
			_ = conn.Close()
		}
	})
	return c
}

// count returns how many connections were made before it: it connects once itself, and
// counts what was accepted before its own connection (the backlog is accepted in order).
func (c *counted) count(t *testing.T) int {
	t.Helper()
	probe, err := net.Dial("tcp", c.l.Addr().String())
	require.NoError(t, err)
	defer probe.Close()
	n := 0
	for conn := range c.accepted {
		own := conn.RemoteAddr().String() == probe.LocalAddr().String()
		_ = conn.Close()
		if own {
			return n
		}
		n++
	}
	t.Fatal("the listener closed before the probe was accepted")
	return n
}

// A receiver that redirects to 127.0.0.1 is not followed there, whatever the status and
// even with private receivers allowed (the receiver itself is on loopback): the attempt
// fails with ErrRedirect naming the target, nothing connects to it, and the deliverer
// counts a retry.
func TestRedirectToLoopbackIsRefused(t *testing.T) {
	t.Parallel()
	target := listenCounted(t)
	to := "http://" + target.l.Addr().String() + "/admin"
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, status)
		}))
		c := webhook.Client(true)
		resp, err := c.Post(srv.URL, "application/json", strings.NewReader(`{}`))
		if resp != nil {
			resp.Body.Close()
		}
		c.CloseIdleConnections()
		srv.Close()
		require.ErrorIs(t, err, webhook.ErrRedirect, "status %d", status)
		assert.Contains(t, err.Error(), "redirected to "+strings.TrimSuffix(to, "/admin"))
	}

	mock := mockNow()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	ob := memOutbox(t, mock, store.OutboxOptions{})
	d := start(t, webhook.Options{URLs: []string{srv.URL}, Secret: webhook.NewSecret(), AllowPrivate: true, Outbox: ob, Clock: mock,
		Backoff: webhook.Backoff{Initial: time.Second, Rand: noJitter}})
	require.NoError(t, d.Send(context.Background(), ending(storetest.NewID(), mock.Now())))
	waitPending(t, ob, settledAfter(1), "the attempt failed and will be retried")
	assert.Equal(t, webhook.Stats{Retries: 1}, d.Stats())
	assert.Zero(t, target.count(t), "nothing connected to the redirect's target")
}

// Without allowPrivate the client connects only to public addresses: a receiver on
// loopback is refused at connect time, named by address or by a name that resolves to
// it; with allowPrivate it is reached.
func TestClientRefusesPrivateAddressesUnlessAllowed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, u := range []string{srv.URL, "http://localhost:" + strconv.Itoa(port)} {
		c := webhook.Client(false)
		resp, err := c.Post(u, "application/json", strings.NewReader(`{}`))
		if resp != nil {
			resp.Body.Close()
		}
		require.ErrorIs(t, err, validator.ErrUnsafeURL, u)
		var ue *validator.URLError
		require.True(t, errors.As(err, &ue))
		assert.Equal(t, "private_address", ue.Reason)

		c = webhook.Client(true)
		resp, err = c.Post(u, "application/json", strings.NewReader(`{}`))
		require.NoError(t, err, u)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		c.CloseIdleConnections()
	}
}

// A deliverer given a client that refuses private addresses keeps retrying, never
// reaching the receiver: the guard holds for its URLs too.
func TestDelivererWithTheGuardNeverReachesLoopback(t *testing.T) {
	t.Parallel()
	mock := mockNow()
	secret := webhook.NewSecret()
	rcv := newReceiver(t, secret, mock)
	ob := memOutbox(t, mock, store.OutboxOptions{})
	guarded := webhook.Client(false)
	t.Cleanup(guarded.CloseIdleConnections)
	d := start(t, webhook.Options{URLs: []string{rcv.URL()}, Secret: secret, AllowPrivate: true, HTTPClient: guarded,
		Outbox: ob, Clock: mock, Backoff: webhook.Backoff{Initial: time.Second, Rand: noJitter}})
	require.NoError(t, d.Send(context.Background(), ending(storetest.NewID(), mock.Now())))
	waitPending(t, ob, settledAfter(1), "the attempt failed")
	assert.Empty(t, rcv.allTries())
	assert.Equal(t, webhook.Stats{Retries: 1}, d.Stats())
}
