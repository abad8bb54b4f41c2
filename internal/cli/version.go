package cli

import (
	"context"
	"fmt"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "0.1.0-dev"

func init() {
	register(&command{name: "version", summary: "print the version", run: func(_ context.Context, env *Env, _ []string) int {
		fmt.Fprintln(env.Stdout, "mcpbridge", Version)
		return ExitOK
	}})
}
