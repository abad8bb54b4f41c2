package demo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
)

// startDemo serves the demo for one test and stops it when the test ends.
func startDemo(t *testing.T, opts server.Options) (string, *server.Manager) {
	t.Helper()
	if testing.Verbose() && opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	url, mgr, stop, err := demo.Start(t.Context(), "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, mgr
}

// connect opens a go-sdk client session (a peer nobody here wrote) to url.
func connect(t *testing.T, url string, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, copts)
	var sopts *mcp.ClientSessionOptions
	if version != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: 3}, sopts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("tool error: %s", b.String())
	}
	return b.String()
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return textOf(t, res)
}

func TestGoSDKClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    server.Options
		version string
	}{
		{"sse", server.Options{}, "2025-11-25"},
		{"sse-default-version", server.Options{}, ""},
		{"json", server.Options{JSONResponse: true}, "2025-06-18"},
		{"eventstore", server.Options{EventStore: server.NewMemoryEventStore(), Retry: 10 * time.Millisecond}, "2025-11-25"},
		{"stateless", server.Options{Stateless: true}, "2025-03-26"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := startDemo(t, tc.opts)
			cs := connect(t, url, nil, tc.version)
			if got := cs.InitializeResult().ServerInfo.Name; got != demo.Name {
				t.Errorf("serverInfo.name = %q", got)
			}
			if got, want := cs.InitializeResult().ProtocolVersion, tc.version; want != "" && got != want {
				t.Errorf("protocolVersion = %q, want %q", got, want)
			}
			if err := cs.Ping(t.Context(), nil); err != nil {
				t.Fatalf("ping: %v", err)
			}
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, ","); got != "echo,add,slow,ask,big,drop" {
				t.Errorf("tools = %s", got)
			}
			if got := call(t, cs, "echo", map[string]any{"message": "hi there"}); got != "hi there" {
				t.Errorf("echo = %q", got)
			}
			if got := call(t, cs, "add", map[string]any{"a": 2, "b": 3.5}); got != "5.5" {
				t.Errorf("add = %q", got)
			}
			// Past the 64 KiB line and token limits of naive readers; the
			// multi-megabyte case is TestBig (slow under -race).
			if got := call(t, cs, "big", map[string]any{"bytes": 100 << 10}); len(got) != 100<<10 {
				t.Errorf("big returned %d bytes", len(got))
			}
		})
	}
}

func TestSlowProgress(t *testing.T) {
	url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore()})
	progress := make(chan string, 10)
	cs := connect(t, url, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- fmt.Sprintf("%v/%v %s", req.Params.Progress, req.Params.Total, req.Params.Message)
		},
	}, "2025-11-25")
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 3, "delayMs": 1}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); got != "done after 3 steps" {
		t.Errorf("slow = %q", got)
	}
	// The client hands notifications to the handler asynchronously, so the
	// last one may land after CallTool returned.
	var got []string
	for len(got) < 3 {
		select {
		case p := <-progress:
			got = append(got, p)
		case <-time.After(5 * time.Second):
			t.Fatalf("progress so far: %q", got)
		}
	}
	if s := strings.Join(got, "; "); s != "1/3 step 1 of 3; 2/3 step 2 of 3; 3/3 step 3 of 3" {
		t.Errorf("progress = %s", s)
	}
}

func TestAskSampling(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	cs := connect(t, url, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			q := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "answer to " + q}}, nil
		},
	}, "2025-11-25")
	if got := call(t, cs, "ask", map[string]any{"question": "why?"}); got != "answer to why?" {
		t.Errorf("ask = %q", got)
	}

	// Without the sampling capability the tool reports an error result.
	plain := connect(t, url, nil, "2025-11-25")
	res, err := plain.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "q"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("ask without sampling: want an error result")
	}
}

func TestDropResumes(t *testing.T) {
	url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore(), Retry: time.Millisecond})
	cs := connect(t, url, nil, "2025-11-25")
	if got := call(t, cs, "drop", map[string]any{"steps": 2}); got != "survived the drop after 2 steps" {
		t.Errorf("drop = %q", got)
	}
}

func TestSessionsEndWithClient(t *testing.T) {
	url, mgr := startDemo(t, server.Options{})
	cs := connect(t, url, nil, "2025-11-25")
	if n := mgr.SessionCount(); n != 1 {
		t.Fatalf("SessionCount = %d, want 1", n)
	}
	cs.Close() // sends DELETE
	if n := mgr.SessionCount(); n != 0 {
		t.Errorf("SessionCount after close = %d, want 0", n)
	}
}

func TestBig(t *testing.T) {
	url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore()})
	cs := connect(t, url, nil, "2025-11-25")
	if got := call(t, cs, "big", map[string]any{"bytes": 3 << 20}); len(got) != 3<<20 {
		t.Errorf("big returned %d bytes", len(got))
	}
}

// TestSlowCancel: cancelling the call's context makes the client send
// notifications/cancelled, which stops the tool; the session goes on.
func TestSlowCancel(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	url, _ := startDemo(t, server.Options{Logger: logger})
	first := make(chan struct{}, 100)
	cs := connect(t, url, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { first <- struct{}{} },
	}, "2025-11-25")
	ctx, cancel := context.WithCancel(t.Context())
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 1000, "delayMs": 10}}
	params.SetProgressToken(7)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		errc <- err
	}()
	<-first
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "request cancelled by client") {
		if time.Now().After(deadline) {
			t.Fatalf("the server never saw the cancellation; logs:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Errorf("ping after cancel: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
