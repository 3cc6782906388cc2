package ask_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Only the face (ask), the programs (cmd/, examples/) and the test kit (elicittest) import
// the MCP SDK: the engine, the registry, the validator and the tools do not, so a tool
// package uses the face exactly as an outside author would.
func TestOnlyTheFaceImportsTheSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/elicitd/elicitd/...").Output()
	require.NoError(t, err)
	var importers []string
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.Contains(imports, "github.com/modelcontextprotocol/go-sdk") {
			importers = append(importers, strings.TrimPrefix(pkg, "github.com/elicitd/elicitd/"))
		}
	}
	require.Contains(t, importers, "ask", "the listing saw the face")
	for _, p := range importers {
		// tasks serves a protocol extension's wire on a go-sdk server, around any tools.
		allowed := p == "ask" || p == "tasks" || p == "elicittest" || strings.HasPrefix(p, "cmd/") || strings.HasPrefix(p, "examples/")
		assert.True(t, allowed, "%s imports the MCP SDK; only the face, tasks, cmd/, examples/ and the test kit may", p)
	}
}
