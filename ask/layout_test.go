package ask_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
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

// The durable call's life has one home: only the durable*.go files read or write the store
// and talk to other nodes (calls on the Elicitor's store and relay); the face and the eras
// only ask whether there is a store.
func TestOnlyTheDurableFilesUseTheStore(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			method, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			field, ok := method.X.(*ast.SelectorExpr)
			if !ok || field.Sel.Name != "store" && field.Sel.Name != "relay" {
				return true
			}
			seen++
			assert.True(t, strings.HasPrefix(name, "durable"), "%s calls %s.%s: the store is the durable files' (durable*.go)",
				fset.Position(call.Pos()), field.Sel.Name, method.Sel.Name)
			return true
		})
	}
	assert.Positive(t, seen, "the durable files' calls on the store were seen")
}
