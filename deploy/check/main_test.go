package check

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test of the package leaves no goroutine behind, as in the rest of the repository.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
