//go:build nogui

package cli

import (
	"context"
	"fmt"
)

func init() {
	register(&command{name: "tray", summary: "the tray app (not in this headless build)", run: runTrayMissing})
}

// runTrayMissing explains the missing tray instead of "unknown command":
// this binary was built with -tags nogui for servers and containers.
func runTrayMissing(ctx context.Context, env *Env, args []string) int {
	fmt.Fprintln(env.Stderr, "mcpbridge: the tray app is not in this build (built with -tags nogui); manage endpoints with 'mcpbridge endpoint' and 'mcpbridge config', or see 'mcpbridge help'")
	return ExitUsage
}
