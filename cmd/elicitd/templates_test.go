package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
