package ask_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Another module can import elicitd: a fresh module that requires it (through a replace
// directive pointing at this checkout) builds and runs a program using the public API.
func TestAnotherModuleImportsTheLibrary(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(here))
	dir := t.TempDir()
	gomod := "module example.com/mytools\n\ngo 1.26\n\nrequire github.com/elicitd/elicitd v0.0.0\n\nreplace github.com/elicitd/elicitd => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644))
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicittest"
)

type Address struct {
	City    string `+"`json:\"city\" label:\"City\" form:\"required\"`"+`
	Country string `+"`json:\"country\" options:\"US=United States;CA=Canada\" form:\"required\"`"+`
}

func main() {
	form := ask.MustForm[Address]("Delivery")
	server := mcp.NewServer(&mcp.Implementation{Name: "mytools", Version: "1"}, nil)
	x := ask.New(server, ask.Options{})
	_ = x
	answer, _ := form.Decode(map[string]any{"city": "Oslo", "country": "CA"})
	cases, _ := elicittest.Invalid(form.Compiled(), nil)
	fmt.Println(string(form.Compiled().WireSchema()))
	fmt.Println(answer.City, answer.Country, len(cases) > 0)
}
`), 0o644))
	cmd := exec.Command("go", "run", "-mod=mod", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, string(out))
	assert.Contains(t, lines[0], `"country":{"type":"string","title":"country","oneOf":[{"const":"US","title":"United States"}`)
	assert.Equal(t, "Oslo CA true", lines[1])
}
