package main

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/tasks"
)

// BenchmarkTaskPoll measures what a task's poll costs the server beside what a pull-era
// round and go-sdk's ping cost, on one elicitd --http on its default embedded store, from one
// go-sdk client that declares the Tasks extension: "ping" is go-sdk's ping (on a 2025-11-25
// session: 2026-07-28 has none); "get" is tasks/get of a
// task waiting for the person; "round" is one pull-era request of ask_user (a whole call,
// asked and answered, is two: each op makes one call and counts as two). It reports the
// server process's CPU per request (server-cpu-us/req).
//
//	go test ./cmd/elicitd -run '^$' -bench BenchmarkTaskPoll -benchtime 2000x
func BenchmarkTaskPoll(b *testing.B) {
	s := startQuiet(b, []string{"--rate", "0", "--max-live", "100000", "--log-level", "error", "--store", "embedded", "--data-dir", b.TempDir()})
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, Capabilities: tasksCaps(),
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked")
		}})
	if err := mcp.AddSendingCustomMethod[*tasks.IDParams, *tasks.Detailed](client, "tasks/get"); err != nil {
		b.Fatal(err)
	}
	cs, err := client.Connect(ctx, httpTransport(s, nil), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: ageArgs})
	if err != nil {
		b.Fatal(err)
	}
	related, _ := res.Meta[tasks.RelatedTask].(map[string]any)
	id, _ := related["taskId"].(string)
	if id == "" {
		b.Fatal("ask_user did not become a task")
	}
	// A pull-era client without the extension, for the rounds.
	pull := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked")
		}})
	ps, err := pull.Connect(ctx, httpTransport(s, nil), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	old, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, httpTransport(s, nil),
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer old.Close()
	ops := map[string]struct {
		per int
		op  func() error
	}{
		// 2026-07-28 has no ping: a 2025-11-25 session's.
		"ping": {1, func() error { return old.Ping(ctx, nil) }},
		"get": {1, func() error {
			d, err := mcp.CallCustomMethod[*tasks.IDParams, *tasks.Detailed](ctx, cs, "tasks/get", &tasks.IDParams{TaskID: id})
			if err == nil && d.Status != tasks.InputRequired {
				err = errors.New("the task is " + d.Status)
			}
			return err
		}},
		"round": {2, func() error { return askedAndAnswered(ctx, ps) }},
	}
	for _, name := range []string{"ping", "get", "round"} {
		o := ops[name]
		b.Run(name, func(b *testing.B) {
			for range 20 { // warm-up
				if err := o.op(); err != nil {
					b.Fatal(err)
				}
			}
			pid := s.cmd.Process.Pid
			before := processCPU(pid)
			b.ResetTimer()
			for range b.N {
				if err := o.op(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := processCPU(pid) - before
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*o.per), "server-cpu-us/req")
		})
	}
}
