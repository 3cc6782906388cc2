// Command bareserver serves package bare on stdio, for the round-trip benchmark.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitd/elicitd/cmd/elicitd/internal/bare"
)

func main() {
	if err := bare.Server().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
