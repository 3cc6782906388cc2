package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
	"github.com/elicitd/elicitd/elicitation"
)

// The frames a 2026-07-28 client sends for one answered question, as the peers harness's
// driver sends them: the _meta of every request, and ask_user's arguments.
const (
	framesMeta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	framesArgs = `{"message":"Who?","schema":{"properties":{"age":{"minimum":0,"type":"integer"},` +
		`"email":{"format":"email","type":"string"},"name":{"minLength":1,"type":"string"}},"required":["name","age","email"],"type":"object"}}`
	framesAnswer = `{"action":"accept","content":{"age":36,"email":"ada@example.com","name":"Ada"}}`
)

// BenchmarkFrames is the server's own cost of one answered 2026-07-28 question, without a
// client library or a process boundary: JSON-RPC lines written to the server's transport
// through operating-system pipes within this process, one call at a time, the first request and the retry that
// answers it, its responses read back. "raw" is the bare server's raw tool on the SDK's
// transport (the peers harness's raw go-sdk server); "elicitd" is ask_user on elicitd's
// transport. It reports, per call, the heap allocated (B/op, allocs/op) and the CPU this
// process used (cpu-us/op), both server and the few lines of the writing side: what a
// regression in the server's own path shows first. ns/op is one call.
func BenchmarkFrames(b *testing.B) {
	for _, impl := range []string{"raw", "elicitd"} {
		b.Run(impl, func(b *testing.B) { benchFrames(b, impl) })
	}
}

func benchFrames(b *testing.B, impl string) {
	// Operating-system pipes, as a client's stdio: elicitd's transport writes its own
	// (pollable) end itself, and the SDK's writes a plain writer.
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = inR.Close(), outR.Close(); _ = outW.Close() }()
	done := make(chan error, 1)
	tool, key := "ask_user", "elicit-1"
	var srv *server
	if impl == "raw" {
		tool, key = "ask_raw", "q"
		go func() {
			done <- bare.Server().Run(context.Background(), &mcp.IOTransport{Reader: inR, Writer: nopWriteCloser{outW}})
		}()
	} else {
		srv = newServer(options{MaxLive: 1 << 20}, "bench")
		t := &lineTransport{in: inR, out: outW, maxFrame: maxFrameBytes, log: slog.New(slog.DiscardHandler)}
		go func() { done <- srv.mcp.Run(context.Background(), t) }()
	}
	rd := bufio.NewReaderSize(outR, 1<<20)
	id := 0
	call := func(params string) []byte {
		id++
		if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,%s}}`+"\n", id, framesMeta, params); err != nil {
			b.Fatal(err)
		}
		line, err := rd.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		return line
	}
	args := ""
	if impl == "elicitd" {
		args = `,"arguments":` + framesArgs
	}
	var resp struct {
		Result struct {
			RequestState string `json:"requestState"`
			IsError      bool   `json:"isError"`
		} `json:"result"`
	}
	question := func() {
		line := call(`"name":"` + tool + `"` + args)
		if err := json.Unmarshal(line, &resp); err != nil || resp.Result.RequestState == "" {
			b.Fatalf("the first request: %s", line)
		}
		line = call(`"name":"` + tool + `"` + args + `,"inputResponses":{"` + key + `":` + framesAnswer + `},"requestState":"` + resp.Result.RequestState + `"`)
		resp.Result.RequestState = ""
		if err := json.Unmarshal(line, &resp); err != nil || resp.Result.IsError || resp.Result.RequestState != "" {
			b.Fatalf("the retry: %s", line)
		}
	}
	for range 200 { // what is set up once, and the forms' cache
		question()
	}
	b.ReportAllocs()
	cpu0 := processCPU(os.Getpid())
	b.ResetTimer()
	for b.Loop() {
		question()
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(os.Getpid())-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
	_ = inW.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if srv != nil {
		_ = srv.close(context.Background(), elicitation.ClientGone)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
