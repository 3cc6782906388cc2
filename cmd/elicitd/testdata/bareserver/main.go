// Command bareserver serves package bare for the round-trip benchmarks: on stdio, or with
// -http ADDR over Streamable HTTP at ADDR's /mcp (bare.Handler: sessions for the push era,
// stateless for the pull era) until it is killed.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address, path /mcp, instead of stdio")
	flag.Parse()
	if *addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/mcp", bare.Handler())
		log.Fatal(http.ListenAndServe(*addr, mux))
	}
	if err := bare.Server().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
