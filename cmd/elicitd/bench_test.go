package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"elicitd/cmd/elicitd/internal/bare"
	"elicitd/session"
	"elicitd/tools"
	"elicitd/validator"
)

// The same 3-field question as the bare server's, as elicitd's ask_user form.
var benchForm = map[string]any{"title": "Parcel", "fields": []any{
	map[string]any{"name": "name", "type": "text", "label": "Name", "required": true},
	map[string]any{"name": "weight", "type": "number", "label": "Weight", "required": true, "exclusive_minimum": 0},
	map[string]any{"name": "express", "type": "boolean", "label": "Express"},
}}

var (
	bareBinOnce sync.Once
	bareBin     string
	bareBinErr  error
)

// bareBinary builds testdata/bareserver next to the elicitd binary, once.
func bareBinary(b *testing.B) string {
	bareBinOnce.Do(func() {
		bareBin = filepath.Join(filepath.Dir(bin), "bareserver")
		out, err := exec.Command("go", "build", "-o", bareBin, "./testdata/bareserver").CombinedOutput()
		if err != nil {
			bareBinErr = fmt.Errorf("building bareserver: %v\n%s", err, out)
		}
	})
	if bareBinErr != nil {
		b.Fatal(bareBinErr)
	}
	return bareBin
}

// BenchmarkRoundTrip compares a whole answered tool call through elicitd's ask_user with the
// same call to a bare go-sdk server, both over in-memory transports with a go-sdk client
// that answers at once, in both eras, from 1 and 16 goroutines. It reports calls/s and the
// p50 and p99 latency of a call.
func BenchmarkRoundTrip(b *testing.B) {
	for _, transport := range []string{"stdio", "mem"} {
		for _, era := range []struct{ name, version string }{{"pull", ""}, {"push", "2025-11-25"}} {
			for _, conc := range []int{1, 16} {
				for _, impl := range []string{"bare", "bare-args", "elicitd", "engine"} {
					if transport == "stdio" && impl == "engine" {
						continue // the engine variant is an in-process tool
					}
					b.Run(fmt.Sprintf("%s/%s/%s/c%d", transport, era.name, impl, conc), func(b *testing.B) {
						tool, args := "ask", map[string]any{}
						switch impl {
						case "bare-args":
							tool, args = "ask_args", map[string]any{"message": "m", "form": benchForm}
						case "elicitd":
							tool, args = "ask_user", map[string]any{"message": "m", "form": benchForm}
						}
						cs, done := benchSession(b, transport, impl, era.version)
						roundTrips(b, conc, func() error {
							res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
							if err == nil && res.IsError {
								err = fmt.Errorf("tool error: %v", res.Content)
							}
							return err
						})
						_ = cs.Close()
						done()
					})
				}
			}
		}
	}
}

// benchSession connects an answering client to the implementation under test: its binary
// over stdio, or its server in process over in-memory transports.
func benchSession(b *testing.B, transport, impl, version string) (*mcp.ClientSession, func()) {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "weight": 2.5, "express": true}}, nil
		},
	})
	opts := &mcp.ClientSessionOptions{ProtocolVersion: version}
	if transport == "stdio" {
		cmd := exec.Command(bin, "--rate", "0", "--max-live", "100000", "--log-level", "error")
		if impl != "elicitd" {
			cmd = exec.Command(bareBinary(b))
		}
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, opts)
		if err != nil {
			b.Fatal(err)
		}
		return cs, func() {}
	}
	var server *mcp.Server
	var srv *tools.Server
	switch impl {
	case "bare", "bare-args":
		server = bare.Server()
	default:
		srv = tools.NewServer(tools.Options{MaxLive: 1 << 20}, "bench")
		server = srv.MCP
		if impl == "engine" {
			addEngineTool(b, srv)
		}
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := client.Connect(context.Background(), ct, opts)
	if err != nil {
		b.Fatal(err)
	}
	return cs, func() {
		_ = ss.Wait()
		if srv != nil {
			_ = srv.Shutdown(context.Background())
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
