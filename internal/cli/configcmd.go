package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpbridge/mcpbridge/internal/clientconfig"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	register(&command{
		name:    "config",
		summary: "print or install the AI client config that launches an endpoint",
		run:     runConfig,
	})
}

const configUsage = `Usage:
  mcpbridge config snippet NAME --client claude|cursor|vscode
  mcpbridge config install NAME --client claude|cursor [--file PATH]
  mcpbridge config path

snippet prints the JSON a client needs to launch "mcpbridge run NAME".
install merges it into the client's config file, keeping everything else
and a backup (PATH.bak); restart the client afterwards.
`

// executable is the binary the AI client should launch; tests replace it.
// The path is not resolved through symlinks, so a package manager's
// stable link keeps working across upgrades.
var executable = os.Executable

func runConfig(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, configUsage)
		return ExitUsage
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "snippet", "install", "path":
	case "help", "-h", "--help", "-help":
		fmt.Fprint(env.Stdout, configUsage)
		return ExitOK
	default:
		return usageError(env, "unknown config command %q (want snippet, install or path)", sub)
	}
	fset := newFlagSet("config "+sub, env)
	client := fset.String("client", "", "claude, cursor or vscode")
	file := fset.String("file", "", "client config file (install)")
	pos, err := parseInterspersed(fset, rest)
	if err != nil {
		return usageError(env, "%v", err)
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	if sub == "path" {
		fmt.Fprintln(env.Stdout, st.Path())
		return ExitOK
	}
	if len(pos) != 1 {
		return usageError(env, "config %s takes one endpoint NAME", sub)
	}
	switch *client {
	case "claude", "cursor", "vscode":
	case "":
		return usageError(env, "config %s needs --client (claude, cursor or vscode)", sub)
	default:
		return usageError(env, "unknown --client %q (want claude, cursor or vscode)", *client)
	}
	ep, err := st.Endpoint(pos[0])
	if err != nil {
		return failure(env, err)
	}
	exe, err := executable()
	if err != nil {
		return failure(env, fmt.Errorf("finding the mcpbridge binary: %w", err))
	}
	server := clientconfig.ServerEntry(*client, exe, ep.Name, env.getenv(store.EnvConfigDir))

	if sub == "snippet" {
		env.Stdout.Write(clientconfig.Snippet(*client, ep.Name, server))
		return ExitOK
	}

	path := *file
	if path == "" {
		if path, err = clientconfig.DefaultPath(*client); err != nil {
			return failure(env, err)
		}
	}
	added, err := clientconfig.Install(path, ep.Name, server)
	if err != nil {
		return failure(env, err)
	}
	verb := "Updated"
	if added {
		verb = "Added"
	}
	fmt.Fprintf(env.Stdout, "%s %s in %s; restart the client to use it.\n", verb, ep.Name, path)
	return ExitOK
}
