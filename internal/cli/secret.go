package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/term"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	register(&command{
		name:    "secret",
		summary: "store or delete an endpoint's secret in the OS keyring",
		run:     runSecret,
	})
}

const secretUsage = `Usage:
  mcpbridge secret set NAME [--key KEY]      read the value from a prompt or stdin
  mcpbridge secret delete NAME [--key KEY]

KEY defaults to "token" for auth bearer, "oauth" for auth oauth, and to the
only keyring:KEY reference of the endpoint's headers. The value is never
taken from the command line, where other users and shell history see it.
`

// maxSecret bounds what is read from stdin; OAuth token sets are a few KiB.
const maxSecret = 1 << 20

func runSecret(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, secretUsage)
		return ExitUsage
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "set", "delete", "rm":
	case "help", "-h", "--help", "-help":
		fmt.Fprint(env.Stdout, secretUsage)
		return ExitOK
	default:
		return usageError(env, "unknown secret command %q (want set or delete)", sub)
	}
	fs := newFlagSet("secret "+sub, env)
	key := fs.String("key", "", "secret name")
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.Stdout, secretUsage)
			return ExitOK
		}
		return usageError(env, "%v", err)
	}
	if len(pos) == 0 {
		return usageError(env, "secret %s needs an endpoint NAME", sub)
	}
	if len(pos) > 1 {
		if sub == "set" {
			return usageError(env, "secret set takes only NAME: the value is read from a prompt or stdin, never from the command line")
		}
		return usageError(env, "secret %s takes one NAME", sub)
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	ep, err := st.Endpoint(pos[0])
	if err != nil {
		return failure(env, err)
	}
	k := *key
	if k == "" {
		names := ep.SecretNames()
		if len(names) != 1 {
			return usageError(env, "endpoint %s uses %d keyring secrets; say which with --key", ep.Name, len(names))
		}
		k = names[0]
	}

	if sub != "set" {
		if err := st.DeleteSecret(ctx, ep.ID, k); err != nil {
			if errors.Is(err, store.ErrSecretNotFound) {
				fmt.Fprintf(env.Stderr, "mcpbridge: endpoint %s has no secret %q stored\n", ep.Name, k)
				return ExitError
			}
			return failure(env, err)
		}
		fmt.Fprintf(env.Stdout, "Deleted secret %s of endpoint %s.\n", k, ep.Name)
		return ExitOK
	}

	value, err := readSecret(env, fmt.Sprintf("Secret %s for endpoint %s: ", k, ep.Name))
	if err != nil {
		return failure(env, err)
	}
	if err := st.SetSecret(ctx, ep.ID, k, value); err != nil {
		return failure(env, err)
	}
	fmt.Fprintf(env.Stdout, "Stored secret %s of endpoint %s in the keyring.\n", k, ep.Name)
	if !slices.Contains(ep.SecretNames(), k) {
		fmt.Fprintf(env.Stderr, "mcpbridge: note: endpoint %s does not use secret %q yet; reference it in a header as \"keyring:%s\"\n", ep.Name, k, k)
	}
	return ExitOK
}

// readSecret prompts with echo off when stdin is a terminal, and otherwise
// reads all of stdin (for pipes: "pass show x | mcpbridge secret set NAME"),
// dropping one trailing newline.
func readSecret(env *Env, prompt string) (string, error) {
	if f, ok := env.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(env.Stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(env.Stderr)
		if err != nil {
			return "", fmt.Errorf("reading secret: %w", err)
		}
		if len(b) == 0 {
			return "", errors.New("empty secret; nothing was stored")
		}
		return string(b), nil
	}
	if env.Stdin == nil {
		return "", errors.New("no secret on stdin; pipe it in or run in a terminal")
	}
	b, err := io.ReadAll(io.LimitReader(env.Stdin, maxSecret+1))
	if err != nil {
		return "", fmt.Errorf("reading secret: %w", err)
	}
	if len(b) > maxSecret {
		return "", errors.New("secret on stdin is larger than 1 MiB")
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return "", errors.New("empty secret on stdin; nothing was stored")
	}
	return string(b), nil
}
