package ask

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/store/memory"
	"github.com/elicitd/elicitd/store/storetest"
)

// A node that cannot hold an adopted question (it is stopping: its registry refuses new
// members) leaves the record as the node that is gone left it, for the next survivor's
// sweep: it does not make the record its own first, which left a question that no timer
// here would end at its deadline.
func TestAStoppingNodeAdoptsNothing(t *testing.T) {
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	el := New(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), Options{Store: st, Node: "survivor"})
	now := time.Now()
	rec := storetest.Sample("alice", storetest.NewID(), now, now.Add(time.Hour))
	rec.Node, rec.Asleep, rec.Question, rec.Due = "gone", true, "Q1", now.Add(30*time.Minute)
	rec.Claimed, rec.Outcome, rec.Ends = 2, nil, nil
	_, err := st.Create(context.Background(), rec)
	require.NoError(t, err)
	require.NoError(t, el.Close(context.Background(), elicitation.Shutdown))

	el.adoptAsleep(context.Background(), "gone")
	got, err := st.Get(context.Background(), "alice", rec.ID)
	require.NoError(t, err)
	assert.Equal(t, "gone", got.Node, "the record is still the gone node's, for another survivor to adopt")
	assert.Equal(t, rec.Epoch, got.Epoch)
	assert.Zero(t, el.asleep.len())
}
