package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/validator"
)

// docs/templates.md is followed as a reader would: its elicit commands run, its example is
// the example directory's file, and its curl recipe reads a built-in template that elicitd
// then takes as a file.

const templatesDoc = "../../docs/templates.md"

// The scripted elicit command of docs/templates.md asks the example template and ends with
// the answers, after the re-prompt it promises.
func TestTemplatesDocElicitCommand(t *testing.T) {
	var lines []string
	for _, b := range docBlocks(t, templatesDoc) {
		if b.lang != "sh" || b.section != "Setting it up" {
			continue
		}
		for line := range strings.Lines(b.text) {
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "go run ./cmd/elicit ") {
				lines = append(lines, line)
			}
		}
	}
	require.Len(t, lines, 2, "an interactive command and its scripted twin")
	scripted := lines[1]
	require.Contains(t, scripted, "--answers examples/templates.answers.json")
	assert.Equal(t, lines[0], strings.Replace(scripted, " --answers examples/templates.answers.json", "", 1), "the same command")

	elicit := filepath.Join(t.TempDir(), "elicit")
	out, err := goBuild(elicit, "../elicit")
	require.NoError(t, err, "%s", out)
	for _, era := range []string{"", " --protocol 2025-11-25"} {
		line := strings.Replace(scripted, "go run ./cmd/elicit ", "'"+elicit+"'"+era+" ", 1)
		line = strings.Replace(line, "go run ./cmd/elicitd", "'"+bin+"'", 1)
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Dir = repoRoot(t)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		require.NoError(t, err, "%s\n%s", line, stderr.String())
		var result map[string]any
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &result), stdout.String())
		assert.Equal(t, "completed", result["status"], era)
		assert.EqualValues(t, 2, result["attempts"], "the re-prompt the page promises")
		assert.Equal(t, "+44 20 7946 0000", result["data"].(map[string]any)["phone"])
		assert.Contains(t, stderr.String(), "Phone: is not in the expected format")
	}
}

// The file the page shows is the example's, as it is.
func TestTemplatesDocShowsTheExample(t *testing.T) {
	file, err := os.ReadFile(filepath.Join(exampleTemplates(t), "contact.json"))
	require.NoError(t, err)
	var shown []string
	for _, b := range docBlocks(t, templatesDoc) {
		if b.lang == "json" && b.section == "The file" {
			shown = append(shown, b.text)
		}
	}
	assert.Equal(t, []string{string(file)}, shown)
}

// The curl recipe reads a built-in template into a file; elicitd takes that file as it is,
// and reworded, as the built-in's replacement. When it fails, the file already there stays.
func TestTemplatesDocCurlRecipe(t *testing.T) {
	var recipe string
	for _, b := range docBlocks(t, templatesDoc) {
		if b.lang == "sh" && strings.HasSuffix(b.heading, ": curl recipe") {
			recipe += b.text
		}
	}
	require.Contains(t, recipe, "read_template create_shipment > create_shipment.json.tmp")
	s := startHTTPWith(t, []string{"--store", "memory"})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", recipe)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ELICITD_URL="+s.url)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	read, err := os.ReadFile(filepath.Join(dir, "create_shipment.json"))
	require.NoError(t, err)
	builtin, err := loadTemplates(nil)
	require.NoError(t, err)
	want, _ := builtin.Get("create_shipment")
	assert.JSONEq(t, string(want.JSON), string(read))

	out2, err := runElicitd(t, []string{"--templates", dir, "--log-level", "warn"})
	assert.NoError(t, err, "the built-in as read is a good replacement: %s", out2)

	var form validator.Form
	require.NoError(t, json.Unmarshal(read, &form))
	form.Title, form.Fields[1].Label = "Expédition", "Nom de l'expéditeur"
	reworded, err := json.Marshal(form)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "create_shipment.json"), reworded, 0o644))
	set, err := loadTemplates([]string{dir})
	require.NoError(t, err)
	tmpl, _ := set.Get("create_shipment")
	assert.Equal(t, "Expédition", tmpl.Form.Title())

	// The recipe fails, and leaves the file there as it was, when there is no such template
	// or no elicitd to read it from.
	for _, c := range []struct{ name, recipe, url string }{
		{"no such template", strings.Replace(recipe, "read_template create_shipment", "read_template nope", 1), s.url},
		{"no elicitd", recipe, "http://127.0.0.1:1/mcp"},
	} {
		cmd = exec.CommandContext(ctx, "sh", "-e", "-c", c.recipe)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ELICITD_URL="+c.url)
		out, err = cmd.CombinedOutput()
		assert.Error(t, err, "%s: %s", c.name, out)
		kept, err := os.ReadFile(filepath.Join(dir, "create_shipment.json"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(reworded, kept), "%s: the file is as it was, not %d bytes of %q...", c.name, len(kept), kept[:min(len(kept), 40)])
	}
}
