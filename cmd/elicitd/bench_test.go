package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"elicitd/session"
	"elicitd/tools"
	"elicitd/validator"
)

// The same 3-field question, as elicitd's ask_user form and as the bare server's schema.
var (
	benchForm = map[string]any{"title": "Parcel", "fields": []any{
		map[string]any{"name": "name", "type": "text", "label": "Name", "required": true},
		map[string]any{"name": "weight", "type": "number", "label": "Weight", "required": true, "exclusive_minimum": 0},
		map[string]any{"name": "express", "type": "boolean", "label": "Express"},
	}}
	benchSchema = json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","title":"Name"},
		"weight":{"type":"number","title":"Weight"},
		"express":{"type":"boolean","title":"Express"}},"required":["name","weight"]}`)
	benchAnswer = map[string]any{"name": "Ada", "weight": 2.5, "express": true}
)

// bareServer is a plain go-sdk v1.8 server whose one tool asks the same question: with
// Elicit on a push-era session, with InputRequests on a pull-era one.
func bareServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	ask := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, any, error) {
		var content map[string]any
		if req.ProtocolVersion() >= "2026-07-28" {
			if req.Params.RequestState == "" {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "m", RequestedSchema: benchSchema}}, RequestState: "s"}, nil, nil
			}
			content = req.Params.InputResponses["q"].(*mcp.ElicitResult).Content
		} else {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "m", RequestedSchema: benchSchema})
			if err != nil {
				return nil, nil, err
			}
			content = res.Content
		}
		b, _ := json.Marshal(content)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req)
	})
	// ask_args takes the same arguments as ask_user (and ignores the form), so the bytes on
	// the wire match and only the work done with them differs.
	mcp.AddTool(s, &mcp.Tool{Name: "ask_args"}, func(ctx context.Context, req *mcp.CallToolRequest, _ tools.AskUserInput) (*mcp.CallToolResult, any, error) {
		return ask(ctx, req)
	})
	return s
}

// BenchmarkRoundTrip compares a whole answered tool call through elicitd's ask_user with the
// same call to a bare go-sdk server, both over in-memory transports with a go-sdk client
// that answers at once, in both eras, from 1 and 16 goroutines. It reports calls/s and the
// p50 and p99 latency of a call.
func BenchmarkRoundTrip(b *testing.B) {
	for _, era := range []struct{ name, version string }{{"pull", ""}, {"push", "2025-11-25"}} {
		for _, conc := range []int{1, 16} {
			for _, impl := range []string{"bare", "bare-args", "elicitd", "engine"} {
				b.Run(fmt.Sprintf("%s/%s/c%d", era.name, impl, conc), func(b *testing.B) {
					var server *mcp.Server
					tool, args := "ask", map[string]any{}
					var srv *tools.Server
					switch impl {
					case "bare":
						server = bareServer()
					case "bare-args":
						server = bareServer()
						tool, args = "ask_args", map[string]any{"message": "m", "form": benchForm}
					case "elicitd":
						srv = tools.NewServer(tools.Options{MaxLive: 1 << 20}, "bench")
						server = srv.MCP
						tool, args = "ask_user", map[string]any{"message": "m", "form": benchForm}
					case "engine":
						srv = tools.NewServer(tools.Options{MaxLive: 1 << 20}, "bench")
						server = srv.MCP
						addEngineTool(b, srv)
					}
					cs, ss := connectInMemory(b, server, era.version)
					roundTrips(b, conc, func() error {
						res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
						if err == nil && res.IsError {
							err = fmt.Errorf("tool error: %v", res.Content)
						}
						return err
					})
					_ = cs.Close()
					_ = ss.Wait()
					if srv != nil {
						_ = srv.Shutdown(context.Background())
					}
				})
			}
		}
	}
}

// addEngineTool adds "ask": the same question as the bare server's, asked through elicitd's
// Elicitor with a precompiled form. Beside ask_user it separates the engine's cost from the
// cost of carrying a form in every call's arguments.
func addEngineTool(b *testing.B, srv *tools.Server) {
	raw, _ := json.Marshal(benchForm)
	form, err := validator.CompileJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	mcp.AddTool(srv.MCP, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return srv.Elicitor().Call(ctx, req, func() (tools.Ask, *tools.Error) {
			return tools.Ask{Tool: "ask", Message: "m", Form: form}, nil
		}, func(o session.Outcome) *mcp.CallToolResult {
			b, _ := json.Marshal(o.Data)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
		}), nil, nil
	})
}

func connectInMemory(b *testing.B, server *mcp.Server, version string) (*mcp.ClientSession, *mcp.ServerSession) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": benchAnswer["name"], "weight": benchAnswer["weight"], "express": benchAnswer["express"]}}, nil
		},
	})
	cs, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	return cs, ss
}

// roundTrips makes b.N calls from conc goroutines and reports calls/s, p50 and p99.
func roundTrips(b *testing.B, conc int, call func() error) {
	var next atomic.Int64
	lat := make([]time.Duration, b.N)
	var failed atomic.Value
	b.ResetTimer()
	began := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := call(); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(lat[b.N/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[min(b.N-1, b.N*99/100)].Microseconds()), "p99-us")
}
