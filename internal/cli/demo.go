package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

func init() {
	register(&command{name: "demo", summary: "run the bridge against an embedded demo server (a guided session, or --stdio for an AI client)", run: runDemo})
	register(&command{name: "serve", summary: "serve the demo MCP server over Streamable HTTP on loopback", run: runServe})
}

func runDemo(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("mcpbridge demo", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var f relayFlags
	f.register(fs, false)
	asStdio := fs.Bool("stdio", false, "act as a stdio MCP server for an AI client instead of running the guided session")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: mcpbridge demo [--stdio] [flags]\n\nStarts an embedded Streamable HTTP MCP server on loopback (tools: echo, add,\nslow, ask, big) and runs the bridge against it. Without --stdio it plays a\ndesktop AI client and prints the whole session; with --stdio an AI client\ncan launch it like any remote endpoint.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	level := f.logLevel
	if !*asStdio && level == "info" {
		level = "error" // the guided session prints its own narrative
	}
	log, closeLog, err := newLogger(env.Stderr, level, f.logFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	defer closeLog()
	url, mgr, stop, err := demo.Start(ctx, "", server.Options{Logger: log, EventStore: server.NewMemoryEventStore(), Retry: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitError
	}
	defer stop()
	cfg := relayConfig{url: url, maxMessage: f.maxMessage}
	if *asStdio {
		log.Info("demo server listening", "url", url)
		return relay(ctx, env, cfg, log)
	}
	if err := walkthrough(ctx, env.Stdout, cfg, mgr, log); err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge demo: %v\n", err)
		return ExitError
	}
	return ExitOK
}

// walkthrough plays a desktop AI client against the bridge, through the same
// stdio framing a real client uses, and narrates the session on out.
func walkthrough(ctx context.Context, out io.Writer, cfg relayConfig, mgr *server.Manager, log *slog.Logger) error {
	fmt.Fprintf(out, "mcpbridge demo: a desktop AI client <-stdio-> mcpbridge <-Streamable HTTP-> demo server at %s\n\n", cfg.url)
	client, err := bridge.NewClient(bridge.ClientOptions{URL: cfg.url, Logger: log, UserAgent: "mcpbridge/" + Version})
	if err != nil {
		return err
	}
	r, err := bridge.NewRelay(bridge.RelayOptions{Client: client, Logger: log})
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- r.Run(ctx, inR, outW)
		outW.Close()
	}()
	s := &script{out: out, w: stdio.NewWriter(inW), r: stdio.NewReader(outR, 0)}

	steps := []struct {
		title  string
		method string
		params any
	}{
		{"Handshake: the client's initialize opens a session", "initialize", map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"sampling": map[string]any{}},
			"clientInfo":      map[string]any{"name": "demo-desktop", "version": Version},
		}},
		{"List the server's tools", "tools/list", nil},
		{"Call echo", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hello through the bridge"}}},
		{"Call add", "tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 40}}},
		{"A slow tool: progress notifications stream back before the result", "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 4, "delayMs": 150}, "_meta": map[string]any{"progressToken": "demo-1"}}},
		{"The server asks the client's model (sampling); the client answers through the bridge", "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"question": "What is 6 x 7?"}}},
	}
	for i, st := range steps {
		if err := s.request(st.title, st.method, st.params); err != nil {
			return err
		}
		if i == 0 {
			s.notify("notifications/initialized")
		}
	}
	fmt.Fprintf(out, "\n== The server restarts and forgets every session (sessions now: %d)\n", mgr.SessionCount())
	mgr.TerminateAll()
	if err := s.request("The next call still works: the bridge re-initializes on its own", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "still here"}}); err != nil {
		return err
	}
	s.send(json.RawMessage(`{"this is": "not JSON-RPC"`), "a broken line from the client")
	if err := s.expectAny(); err != nil {
		return err
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-time.After(10 * time.Second):
		return errors.New("the bridge did not exit after stdin closed")
	}
	fmt.Fprintf(out, "\n== stdin closed: the bridge ended the session (DELETE) and exited. Sessions left on the server: %d\n", mgr.SessionCount())
	return nil
}

// script is the demo's desktop client.
type script struct {
	out  io.Writer
	w    *stdio.Writer
	r    *stdio.Reader
	next int
}

func (s *script) send(line []byte, what string) {
	fmt.Fprintf(s.out, "  -> %s\n", shorten(string(line)))
	s.w.Write(line)
}

func (s *script) notify(method string) {
	m, _ := jsonrpc.NewNotification(method, nil)
	s.send(m.Bytes(), method)
}

func (s *script) request(title, method string, params any) error {
	s.next++
	fmt.Fprintf(s.out, "\n== %s\n", title)
	m, err := jsonrpc.NewRequest(json.RawMessage(fmt.Sprint(s.next)), method, params)
	if err != nil {
		return err
	}
	s.send(m.Bytes(), method)
	for {
		line, err := s.r.ReadLine()
		if err != nil {
			return fmt.Errorf("reading the bridge's stdout: %w", err)
		}
		fmt.Fprintf(s.out, "  <- %s\n", shorten(string(line)))
		got, err := jsonrpc.Parse(line)
		if err != nil {
			return fmt.Errorf("the bridge wrote something that is not JSON-RPC: %w", err)
		}
		switch got.Kind() {
		case jsonrpc.KindRequest:
			// Play the desktop's model for sampling; refuse anything else.
			var reply *jsonrpc.Message
			if got.Method == "sampling/createMessage" {
				reply, _ = jsonrpc.NewResult(got.ID, map[string]any{
					"role": "assistant", "model": "demo-model",
					"content": map[string]any{"type": "text", "text": "42 (answered by the demo client)"},
				})
			} else {
				reply = jsonrpc.NewError(got.ID, jsonrpc.CodeMethodNotFound, "the demo client does not support "+got.Method, nil)
			}
			s.send(reply.Bytes(), "reply")
		case jsonrpc.KindResponse:
			if got.IDKey() == fmt.Sprint(s.next) {
				return nil
			}
		}
	}
}

func (s *script) expectAny() error {
	line, err := s.r.ReadLine()
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "  <- %s\n", shorten(string(line)))
	return nil
}

func shorten(s string) string {
	if len(s) > 220 {
		return s[:220] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strings.TrimSpace(s)
}

func runServe(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("mcpbridge serve", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	addr := fs.String("addr", "127.0.0.1:8808", "address to listen on (loopback unless you mean otherwise)")
	stateless := fs.Bool("stateless", false, "no sessions: a fresh handler per request")
	jsonResp := fs.Bool("json", false, "answer requests with application/json instead of SSE")
	idle := fs.Duration("idle-timeout", 0, "end sessions idle this long (0: never)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	asStdio := fs.Bool("stdio", false, "serve one session over stdin/stdout instead of HTTP: the demo tools with no bridge, the floor for latency comparisons")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	log, closeLog, err := newLogger(env.Stderr, *logLevel, "")
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	defer closeLog()
	if *asStdio {
		if err := demo.ServeStdio(ctx, demo.New(log), env.Stdin, env.Stdout); err != nil {
			fmt.Fprintf(env.Stderr, "mcpbridge serve: %v\n", err)
			return ExitError
		}
		return ExitOK
	}
	opts := server.Options{Logger: log, Stateless: *stateless, JSONResponse: *jsonResp, IdleTimeout: *idle}
	if !*stateless {
		opts.EventStore = server.NewMemoryEventStore()
		opts.Retry = time.Second
	}
	url, _, stop, err := demo.Start(ctx, *addr, opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge serve: %v\n", err)
		return ExitError
	}
	defer stop()
	fmt.Fprintf(env.Stderr, "demo MCP server at %s (Ctrl-C to stop)\n", url)
	<-ctx.Done()
	return ExitOK
}
