// Package cli is mcpbridge's command line: it parses arguments, wires the
// store, the bridge and the logger together, and maps failures to exit codes.
// Subcommands live in their own files and register themselves in init.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // bad arguments or configuration; nothing was sent
)

// Env is what a command may touch of the outside world. Tests build their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv defaults to os.Getenv.
	Getenv func(string) string
}

func (e *Env) getenv(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) int
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("cli: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// Main runs mcpbridge with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		if c, ok := commands["tray"]; ok && hasDesktop(env) {
			return c.run(ctx, env, nil)
		}
		usage(env.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(env.Stdout)
		return ExitOK
	}
	if c, ok := commands[args[0]]; ok {
		return c.run(ctx, env, args[1:])
	}
	if strings.HasPrefix(args[0], "-") {
		// Flags without a subcommand: the relay (mcpbridge --url ...).
		return commands["run"].run(ctx, env, args)
	}
	fmt.Fprintf(env.Stderr, "mcpbridge: unknown command %q (see mcpbridge help)\n", args[0])
	return ExitUsage
}

func hasDesktop(env *Env) bool {
	return env.getenv("DISPLAY") != "" || env.getenv("WAYLAND_DISPLAY") != "" || isDesktopOS
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "mcpbridge: use remote MCP servers from desktop AI clients.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  mcpbridge --url https://host/mcp [flags]   relay stdio to a Streamable HTTP server")
	fmt.Fprintln(w, "  mcpbridge <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'mcpbridge <command> --help' for a command's flags.")
}
