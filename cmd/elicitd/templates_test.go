package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
)

// A reload replaces what the templates serve as a whole: a template whose file is gone
// leaves ask_user's enum and the resources; a bad directory changes nothing.
func TestReloadReplacesTheTemplatesServed(t *testing.T) {
	dir := templateDir(t, map[string]string{"contact.json": contactV1, "delivery.json": `{"fields": [{"name": "city", "type": "text"}]}`})
	set, err := loadTemplates([]string{dir})
	require.NoError(t, err)
	log := &syncBuffer{}
	srv := newServer(options{Templates: set, TemplateDirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(log, nil))}, "test")
	t.Cleanup(func() { _ = srv.close(context.Background(), elicitation.Shutdown) })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.mcp.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	resources := func() []string {
		list, err := cs.ListResources(timeout(t), nil)
		require.NoError(t, err)
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		slices.Sort(uris)
		return uris
	}
	assert.Equal(t, []any{"contact", "delivery"}, askUserProperties(t, cs)["template"]["enum"])
	assert.Contains(t, resources(), "elicitd://templates/delivery")

	require.NoError(t, os.Remove(filepath.Join(dir, "delivery.json")))
	require.NoError(t, srv.reloadTemplates())
	assert.Equal(t, []any{"contact"}, askUserProperties(t, cs)["template"]["enum"])
	assert.Equal(t, []string{"elicitd://stats", "elicitd://templates/contact", "elicitd://templates/create_shipment",
		"elicitd://templates/rate_shipment"}, resources())
	assert.Contains(t, log.String(), `msg="templates reloaded" templates=contact,create_shipment,rate_shipment`)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "contact.json"), []byte(`{"fields": []}`), 0o644))
	require.Error(t, srv.reloadTemplates())
	assert.Contains(t, log.String(), `msg="template problem" problem="`+filepath.Join(dir, "contact.json")+`: form: has no fields; a form needs at least one"`)
	assert.Equal(t, []any{"contact"}, askUserProperties(t, cs)["template"]["enum"], "the set served stays")
	assert.Equal(t, contactV1, readTemplate(t, cs, "contact").Text)
}

// Stopping the SIGHUP watcher does not wait for ever on a reload stuck reading a file: the
// reload is abandoned, and stop returns.
func TestStoppingTheReloadWatcherDoesNotWaitOnAStuckReload(t *testing.T) {
	hup := make(chan os.Signal, 1)
	started, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) }) // the stuck reload ends with the test: no goroutine leaks
	stop := watch(hup, func() {
		close(started)
		<-release
	}, time.Millisecond)
	hup <- syscall.SIGHUP
	select {
	case <-started:
	case <-time.After(failsafe):
		t.Fatal("no reload")
	}
	stopped := make(chan bool, 1)
	go func() { stopped <- stop() }()
	select {
	case inTime := <-stopped:
		assert.False(t, inTime, "the reload was abandoned")
	case <-time.After(failsafe):
		t.Fatal("stop waits for ever on a stuck reload")
	}
}

// A watcher that is not reloading stops at once, and says so.
func TestStoppingAnIdleReloadWatcher(t *testing.T) {
	hup := make(chan os.Signal, 1)
	reloaded := make(chan struct{}, 1)
	stop := watch(hup, func() { reloaded <- struct{}{} }, failsafe)
	hup <- syscall.SIGHUP
	select {
	case <-reloaded:
	case <-time.After(failsafe):
		t.Fatal("no reload")
	}
	assert.True(t, stop(), "ended in time")
	assert.True(t, stop(), "stop may be called again")
}

// A reload that ends after the server has closed (one stop abandoned) serves nothing.
func TestNoReloadIsServedOnceTheServerIsClosed(t *testing.T) {
	dir := templateDir(t, map[string]string{"contact.json": contactV1})
	set, err := loadTemplates([]string{dir})
	require.NoError(t, err)
	srv := newServer(options{Templates: set, TemplateDirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(&syncBuffer{}, nil))}, "test")
	require.NoError(t, srv.close(context.Background(), elicitation.Shutdown))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "delivery.json"), []byte(`{"fields": [{"name": "city", "type": "text"}]}`), 0o644))
	assert.Error(t, srv.reloadTemplates())
	srv.templates.mu.Lock()
	defer srv.templates.mu.Unlock()
	assert.True(t, set == srv.templates.set, "the set served stays")
}

// A directory given twice is read once: its files are not duplicates of themselves.
func TestTemplatesGivenTwiceAreReadOnce(t *testing.T) {
	dir := templateDir(t, map[string]string{"contact.json": contactV1})
	var c templateConfig
	require.NoError(t, c.parse(dir+","+dir+string(filepath.Separator)))
	tmpl, ok := c.set.Get("contact")
	require.True(t, ok)
	assert.Equal(t, filepath.Join(dir, "contact.json"), tmpl.Source)
}
