package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/auth"
	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	register(&command{name: "run", summary: "relay stdio to a Streamable HTTP MCP server (what AI clients launch)", run: runRelay})
}

// relayFlags are the flags shared by run and demo.
type relayFlags struct {
	url        string
	headers    headerList
	headerFile string
	allowHTTP  bool
	caFile     string
	logLevel   string
	logFile    string
	maxMessage int
	oauth      oauthFlags
}

func (f *relayFlags) register(fs *flag.FlagSet, withURL bool) {
	if withURL {
		fs.StringVar(&f.url, "url", "", "the server's MCP endpoint, e.g. https://host/mcp")
		fs.Var(&f.headers, "header", "extra HTTP header \"Name: value\" (repeatable)")
		fs.StringVar(&f.headerFile, "header-file", "", "file of \"Name: value\" lines, one per header (keeps secrets out of the process list)")
		fs.BoolVar(&f.allowHTTP, "allow-http", false, "allow plain http to a non-loopback host")
		fs.StringVar(&f.caFile, "ca-file", "", "PEM file of extra CA certificates to trust (corporate proxies)")
		f.oauth.register(fs)
	}
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFile, "log-file", "", "also append logs to this file")
	fs.IntVar(&f.maxMessage, "max-message-size", bridge.DefaultMaxMessage, "largest message accepted from either side, in bytes")
}

// relayConfig is everything needed to start a relay.
type relayConfig struct {
	url         string
	allowHTTP   bool
	caFile      string
	header      func(ctx context.Context) (http.Header, error)
	toolAllowed func(string) bool
	observer    bridge.Observer
	maxMessage  int
	// connectTimeout bounds dialing and TLS; zero is the default.
	connectTimeout time.Duration
	// start, if set, is called with the relay before it runs (config watching).
	start func(*bridge.Relay)
	// oauth, if set, signs in with OAuth; HTTPClient and Logger are filled in.
	oauth *auth.Options
}

func runRelay(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("mcpbridge run", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f relayFlags
	f.register(fs, true)
	var endpoint string
	fs.StringVar(&endpoint, "endpoint", "", "run the named endpoint from the config (same as 'mcpbridge run NAME')")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: mcpbridge [run] --url URL [flags]\n       mcpbridge run NAME\n\nRelays JSON-RPC between stdio (the AI client) and a Streamable HTTP MCP server.\nstdout carries protocol only; logs go to stderr.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if len(pos) > 1 || (len(pos) == 1 && endpoint != "") {
		fmt.Fprintf(env.Stderr, "mcpbridge: unexpected arguments %q\n", pos)
		return ExitUsage
	}
	if len(pos) == 1 {
		endpoint = pos[0]
	}
	if endpoint != "" && f.logFile == "" {
		// Named bridges log to a per-endpoint file too, which the tray's log
		// view shows; a failure to find the directory is not fatal.
		if dir, err := store.DefaultLogDir(); err == nil && os.MkdirAll(dir, 0o700) == nil {
			f.logFile = store.LogFile(dir, endpoint)
		}
	}
	log, closeLog, err := newLogger(env.Stderr, f.logLevel, f.logFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	defer closeLog()

	var cfg relayConfig
	if endpoint != "" {
		if f.url != "" || len(f.headers) > 0 || f.headerFile != "" {
			fmt.Fprintln(env.Stderr, "mcpbridge: give either a named endpoint or --url/--header, not both")
			return ExitUsage
		}
		c, cleanup, code := namedEndpointConfig(ctx, env, endpoint, &f.oauth, log)
		if code != ExitOK {
			return code
		}
		defer cleanup()
		cfg = c
	} else {
		c, err := flagConfig(&f)
		if err != nil {
			fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
			return ExitUsage
		}
		cfg = c
	}
	cfg.maxMessage = f.maxMessage
	return relay(ctx, env, cfg, log)
}

// namedEndpointConfig is replaced by the store wiring; until a named endpoint
// can be loaded, say so clearly.
var namedEndpointConfig = func(ctx context.Context, env *Env, name string, oauth *oauthFlags, log *slog.Logger) (relayConfig, func(), int) {
	fmt.Fprintf(env.Stderr, "mcpbridge: named endpoints are not available in this build\n")
	return relayConfig{}, nil, ExitUsage
}

// flagConfig builds a relay config from --url and --header flags.
func flagConfig(f *relayFlags) (relayConfig, error) {
	if _, err := bridge.ValidateURL(f.url, f.allowHTTP); err != nil {
		return relayConfig{}, err
	}
	lines := append([]string(nil), f.headers...)
	if f.headerFile != "" {
		more, err := readHeaderFile(f.headerFile)
		if err != nil {
			return relayConfig{}, err
		}
		lines = append(lines, more...)
	}
	h := http.Header{}
	for _, l := range lines {
		k, v, err := parseHeader(l)
		if err != nil {
			return relayConfig{}, err
		}
		h.Add(k, v)
	}
	cfg := relayConfig{url: f.url, allowHTTP: f.allowHTTP, caFile: f.caFile}
	if f.oauth.enabled {
		o := f.oauth.options(f.url, "")
		o.Store = &auth.MemoryStore{} // no name to keep tokens under: this process only
		cfg.oauth = &o
	}
	if len(h) > 0 {
		cfg.header = func(context.Context) (http.Header, error) { return h, nil }
	}
	return cfg, nil
}

// relay runs the bridge on the process's stdio.
func relay(ctx context.Context, env *Env, cfg relayConfig, log *slog.Logger) int {
	hc, err := bridge.NewHTTPClient(bridge.TransportOptions{CAFile: cfg.caFile, DialTimeout: cfg.connectTimeout})
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	copts := bridge.ClientOptions{
		URL:        cfg.url,
		HTTPClient: hc,
		Header:     cfg.header,
		Logger:     log,
		UserAgent:  "mcpbridge/" + Version,
		MaxMessage: cfg.maxMessage,
	}
	if cfg.oauth != nil {
		copts.Auth = newOAuth(*cfg.oauth, hc, log)
	}
	client, err := bridge.NewClient(copts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	r, err := bridge.NewRelay(bridge.RelayOptions{
		Client:      client,
		Logger:      log,
		Observer:    cfg.observer,
		ToolAllowed: cfg.toolAllowed,
		MaxMessage:  cfg.maxMessage,
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitError
	}
	if cfg.start != nil {
		cfg.start(r)
	}
	log.Info("relaying stdio to the MCP server", "url", bridge.RedactURL(cfg.url))
	if err := r.Run(ctx, env.Stdin, env.Stdout); err != nil {
		log.Error("relay ended", "err", err)
		return ExitError
	}
	return ExitOK
}
