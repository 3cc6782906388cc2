package main

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/elicitd/elicitd/store"
	"github.com/elicitd/elicitd/store/natsstore"
)

// Over stdio with the embedded store, a call's first question goes out before its record is
// written (ask.Options.RecordBehind: its requestState, of the layout that carries what the
// record holds, says so), and the next step of the call waits for that write. Read back
// from the data directory once elicitd has exited, every call left one record, created by
// this process, claimed once per round and ended with what the client got: none was
// written out of order, none lost.
func TestStdioWritesEveryRecordBehindItsFirstQuestion(t *testing.T) {
	dir := t.TempDir()
	// A linger no answer here outlasts: each call's first round is recorded by the write of
	// what its answer returns, the call awake (--linger).
	h := start(t, clientSetup{noMRTR: true, elicit: accept(nil), args: []string{"--store", "embedded", "--data-dir", dir, "--linger", "1m"}})
	const calls = 9
	versions := map[string]int{} // of the requestStates: "round 1" or "later", and the layout
	for i := range calls {
		res, err := h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
			Arguments: map[string]any{"message": "How heavy?", "form": weightForm}})
		require.NoError(t, err)
		for round := 1; res.NeedsInput(); round++ {
			payload, _, _ := strings.Cut(res.RequestState, ".")
			b, err := base64.RawURLEncoding.DecodeString(payload)
			require.NoError(t, err)
			versions[map[bool]string{true: "round 1", false: "later"}[round == 1]+" v"+string('0'+rune(b[0]))]++
			weight := 2.5
			if i%3 == 1 && round == 1 {
				weight = -1 // out of range: a re-prompt, a second round
			}
			var key string
			for k := range res.InputRequests {
				key = k
			}
			res, err = h.cs.CallTool(timeout(t), &mcp.CallToolParams{Name: "ask_user",
				Arguments:      map[string]any{"message": "How heavy?", "form": weightForm},
				RequestState:   res.RequestState,
				InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"weight": weight}}}})
			require.NoError(t, err)
		}
		out := structured(t, res)
		require.Equal(t, map[string]any{"weight": 2.5}, out["data"], "%v", out)
	}
	assert.Equal(t, map[string]int{"round 1 v1": 1, "round 1 v2": calls - 1, "later v1": 3}, versions,
		"the first call's record is written before its question goes out; the others' behind it")
	require.NoError(t, h.cs.Close()) // elicitd reads EOF and exits, releasing its data directory
	assert.NotContains(t, h.stderr.String(), "could not be recorded")

	srv, err := natsstore.StartServer(natsstore.ServerOptions{Dir: filepath.Join(dir, "jetstream"), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	kv := rosters(t, srv.ClientURL())
	keys, err := kv.ListKeysFiltered(timeout(t), "q.>")
	require.NoError(t, err)
	var recs []store.Record
	for k := range keys.Keys() {
		e, err := kv.Get(timeout(t), k)
		require.NoError(t, err)
		r, err := store.Decode(e.Value(), e.Revision())
		require.NoError(t, err)
		if r.Era == "pull" {
			recs = append(recs, r)
		}
	}
	require.Len(t, recs, calls, "one record a call")
	rounds, woken := 0, 0
	for _, r := range recs {
		assert.Equal(t, "ended", r.State, "%+v", r)
		assert.Equal(t, r.Handed, r.Claimed, "every round handed out was claimed once")
		assert.Len(t, r.Log, r.Handed)
		// Each answer to a later round woke the hibernating call (the next epoch), in the
		// process that asked it; the answer to a first round written behind its prompt found
		// the call awake. The first call's first round, written before its prompt, was
		// asleep too.
		if r.Epoch == uint64(r.Handed)+1 {
			woken++
		} else {
			assert.EqualValues(t, r.Handed, r.Epoch, "%+v", r)
		}
		assert.Equal(t, recs[0].Node, r.Node)
		assert.Contains(t, string(r.Outcome), "2.5", "the outcome the client got")
		rounds += r.Handed
	}
	assert.Equal(t, calls+3, rounds, "three calls took a second round")
	assert.Equal(t, 1, woken, "only the first call's first round hibernated")
}
