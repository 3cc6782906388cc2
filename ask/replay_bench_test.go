package ask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/ask"
	"github.com/elicitd/elicitd/elicitation"
	"github.com/elicitd/elicitd/elicittest"
	"github.com/elicitd/elicitd/store/memory"
)

// replayRounds is how many questions the tool of BenchmarkReplay asks, one after another.
const replayRounds = 20

// BenchmarkReplay measures what hibernation costs a long call: a tool that asks
// replayRounds questions in a row, each answered at once, on one node with the memory
// store. Hibernating, the call's handler is run again at every round, each earlier round
// answered from the record, the one its retry answers too (1 + 2 + ... + 20 = 210 replayed answers in all); awake
// (Options.KeepAwake), it runs once. One op is one whole call: its first request and its
// replayRounds retries. us/round is the mean time of one retry; replayed/op counts the
// rounds answered from the record.
func BenchmarkReplay(b *testing.B) {
	for _, awake := range []bool{false, true} {
		b.Run(map[bool]string{false: "hibernating", true: "awake"}[awake], func(b *testing.B) {
			server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			s := memory.New(memory.Options{})
			b.Cleanup(func() { _ = s.Close() })
			el := ask.New(server, ask.Options{StateKey: []byte(strings.Repeat("k", 32)), Store: s, KeepAwake: awake, MaxRounds: replayRounds,
				Owner: func(*mcp.CallToolRequest) string { return "caller:bench" }})
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := el.Close(ctx, elicitation.Shutdown); err != nil {
					b.Errorf("closing: %v", err)
				}
			})
			tool := ask.RawTool[struct{}]("long", "", "asks many questions", func(ctx context.Context, _ json.RawMessage) (any, error) {
				var last map[string]any
				for i := range replayRounds {
					data, err := ask.Ask(ctx, ask.Question{Message: fmt.Sprintf("Parcel %d?", i+1), Form: parcelForm})
					if err != nil {
						return nil, err
					}
					last = data
				}
				return last, nil
			})
			tool.Replayable, tool.Pure = true, true
			el.Add(server, tool)
			cs := elicittest.Connect(b, server, elicittest.Pull).Session
			ctx := context.Background()
			replayed0 := el.Counts().ReplayedRounds
			var retries time.Duration
			for b.Loop() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "long", Arguments: map[string]any{}})
				if err != nil {
					b.Fatal(err)
				}
				for round := 1; round <= replayRounds; round++ {
					key := fmt.Sprintf("elicit-%d", round)
					if _, ok := res.InputRequests[key]; !ok {
						b.Fatalf("round %d was not handed out: %+v", round, res.Content)
					}
					t0 := time.Now()
					res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "long", Arguments: map[string]any{}, RequestState: res.RequestState,
						InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: parcelAnswer}}})
					retries += time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
				}
				if res.IsError || len(res.InputRequests) > 0 {
					b.Fatalf("the call did not complete: %+v", res.Content)
				}
			}
			b.ReportMetric(float64(retries.Microseconds())/float64(b.N*replayRounds), "us/round")
			b.ReportMetric(float64(el.Counts().ReplayedRounds-replayed0)/float64(b.N), "replayed/op")
		})
	}
}
