// Command mcpbridge lets desktop AI clients use remote MCP servers: it runs as a
// stdio MCP server and relays every message to a Streamable HTTP endpoint.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpbridge/mcpbridge/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
