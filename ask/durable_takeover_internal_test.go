package ask

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"

	"github.com/elicitd/elicitd/store/memory"
)

// Two identical resends reach a node that does not hold their call: the first takes it
// over, the second finds it held and waits for its round. When the first's write fails
// (another node moved the call first, or the store did not answer), the second is not told
// "moved": it looks at the store again, whether it came before the failure or after.
func TestAFailedTakeOverSendsItsWaitersToTheStore(t *testing.T) {
	el := &Elicitor{store: memory.New(memory.Options{}), calls: &memCalls{}}
	resp := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
	c := &call{el: el, pull: true, id: "n-1", signal: make(chan struct{}, 1)}
	c.claimed, c.claimSum, c.claimRsp, c.slot = 1, responseSum(resp), resp, newClaimSlot()
	_, added := el.calls.addNew(c)
	assert.True(t, added)
	type out struct {
		r         result
		elsewhere bool
	}
	waiter := make(chan out, 1)
	go func() {
		r, elsewhere := c.resume(context.Background(), requestState{ID: "n-1", Round: 1}, nil, resp, true)
		waiter <- out{r, elsewhere}
	}()
	c.dropTakeOver()
	got := <-waiter
	assert.True(t, got.elsewhere, "the waiting resend looks at the store again, not told: %v", got.r.err)
}
