// Package check holds the tests of what deploy/ ships: the container image
// (deploy/Containerfile, built by deploy/build-image), the Helm chart (deploy/helm/elicitd)
// and the compose file (deploy/compose.yaml). It is a module of its own, so that Helm's,
// Kubernetes' and compose-go's dependencies stay out of elicitd's go.mod and out of
// `go test ./...` at the root: .ci/run runs it with `cd deploy/check && go test ./...`.
package check

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// repoRoot is the repository's root: two directories above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot tell where the test's source is")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// need skips t for a missing tool or image outside CI, and fails it under CI=true, where
// every check must run (as the browser tests do with a missing browser).
func need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatalf("%s: %v (under CI a missing tool or image fails this test rather than skipping it; .ci/run installs and builds it)", what, err)
	}
	t.Skipf("%s: %v", what, err)
}
