package elicitationtest_test

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/elicitd/elicitd/elicitation/elicitationtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// NameForm is the smallest form: one required name, trimmed.
func ExampleNameForm() {
	f := &elicitationtest.NameForm{}
	data, _ := f.Validate(map[string]any{"name": "  Ada "})
	_, errs := f.Validate(map[string]any{"name": " "})
	fmt.Println(data["name"], errs[0].Message)
	// Output:
	// Ada Name: is required
}
