// Command confdriver plays a desktop AI client in front of mcpbridge, so that
// the MCP conformance runner can score the bridge as a client:
//
//	conformance client --command "confdriver -bridge /path/to/mcpbridge" --scenario tools_call
//
// The runner appends the URL of its test server as the last argument and
// names the scenario in MCP_CONFORMANCE_SCENARIO. confdriver starts
// `mcpbridge --url <URL> --allow-http`, speaks newline-delimited JSON-RPC to
// it over stdio (initialize, notifications/initialized, then what the
// scenario needs), answers the server's requests (ping, roots/list,
// sampling/createMessage, elicitation/create), then closes the bridge's stdin
// and waits for it to exit.
//
// Exit status: 0 when every step succeeded and the bridge exited 0 on stdin
// EOF, 1 on any failure (explained on stderr), 2 on bad usage.
//
// Unless BROWSER is set, the bridge gets BROWSER=<confdriver> and
// CONFDRIVER_AS_BROWSER=1: run that way, confdriver acts as the web browser
// for OAuth, fetching the URLs it is given and following redirects.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type config struct {
	bridge     string
	bridgeArgs []string
	url        string
	scenario   string
	protocol   string
	calls      []toolCall // explicit -call flags; nil means every listed tool
	timeout    time.Duration
	verbose    bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if os.Getenv(browserEnv) == "1" {
		return actAsBrowser(args, stderr)
	}
	cfg, err := parseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "confdriver: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "confdriver: "+format+"\n", a...)
	}
	if err := drive(ctx, cfg, logf); err != nil {
		logf("FAIL: %v", err)
		return 1
	}
	logf("ok: scenario %s", cfg.scenario)
	return 0
}

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("confdriver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	var bridgeArgs, calls listFlag
	fs.StringVar(&cfg.bridge, "bridge", os.Getenv("MCPBRIDGE_BIN"), "mcpbridge binary (default $MCPBRIDGE_BIN, else mcpbridge on PATH)")
	fs.Var(&bridgeArgs, "bridge-arg", "extra argument for the bridge after --url URL --allow-http (repeatable)")
	fs.StringVar(&cfg.scenario, "scenario", os.Getenv("MCP_CONFORMANCE_SCENARIO"), "what to do after initializing (default $MCP_CONFORMANCE_SCENARIO): initialize = nothing more; anything else = list the tools and call them")
	fs.StringVar(&cfg.protocol, "protocol", "2025-11-25", "protocolVersion to request in initialize")
	fs.Var(&calls, "call", "call only this tool, as NAME or NAME=JSON-ARGUMENTS (repeatable); default: every listed tool with arguments made up from its input schema")
	fs.DurationVar(&cfg.timeout, "timeout", 25*time.Second, "deadline for the whole run (the conformance runner kills clients after 30s)")
	fs.BoolVar(&cfg.verbose, "v", false, "log every message exchanged with the bridge")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: confdriver [flags] URL\n\nPlays a desktop MCP client in front of mcpbridge --url URL.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return nil, fmt.Errorf("want exactly one URL argument, got %d", fs.NArg())
	}
	cfg.url = fs.Arg(0)
	if cfg.bridge == "" {
		cfg.bridge = "mcpbridge"
	}
	if extra := os.Getenv("MCPBRIDGE_ARGS"); extra != "" {
		cfg.bridgeArgs = append(cfg.bridgeArgs, strings.Fields(extra)...)
	}
	cfg.bridgeArgs = append(cfg.bridgeArgs, bridgeArgs...)
	if cfg.scenario == "" {
		cfg.scenario = "tools"
	}
	if strings.HasPrefix(cfg.scenario, "auth/") {
		cfg.bridgeArgs = append(cfg.bridgeArgs, authArgs(cfg.scenario)...)
	}
	for _, c := range calls {
		name, argsJSON, hasArgs := strings.Cut(c, "=")
		tc := toolCall{Name: name}
		if hasArgs {
			if err := json.Unmarshal([]byte(argsJSON), &tc.Arguments); err != nil {
				return nil, fmt.Errorf("-call %s: arguments are not a JSON object: %v", name, err)
			}
		}
		cfg.calls = append(cfg.calls, tc)
	}
	return cfg, nil
}

// authArgs are the bridge's OAuth flags for an auth scenario: sign in when
// asked, with the pre-registered client the runner hands out in
// MCP_CONFORMANCE_CONTEXT, and the metadata document URL the runner expects
// for Client ID Metadata Documents.
func authArgs(scenario string) []string {
	args := []string{"--oauth"}
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if v := os.Getenv("MCP_CONFORMANCE_CONTEXT"); v != "" && json.Unmarshal([]byte(v), &cc) == nil {
		if cc.ClientID != "" {
			args = append(args, "--oauth-client-id", cc.ClientID)
		}
		if cc.ClientSecret != "" {
			args = append(args, "--oauth-client-secret", cc.ClientSecret)
		}
	}
	if scenario == "auth/basic-cimd" {
		args = append(args, "--oauth-client-metadata-url", "https://conformance-test.local/client-metadata.json")
	}
	return args
}
