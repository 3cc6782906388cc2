package memory_test

import (
	"testing"

	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
)

func TestRelayContract(t *testing.T) { storetest.RunRelay(t, &memory.Relay{}) }
