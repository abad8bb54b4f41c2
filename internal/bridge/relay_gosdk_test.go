package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKServer is the official Go SDK's Streamable HTTP server: a peer that
// nobody on this project wrote. restart() drops every session, as a server
// restart does.
type goSDKServer struct {
	*httptest.Server
	mu      sync.Mutex
	handler http.Handler
	opts    mcp.StreamableHTTPOptions
	hits    atomic.Int64
	deletes atomic.Int64
}

func newGoSDKServer(t *testing.T, opts mcp.StreamableHTTPOptions) *goSDKServer {
	t.Helper()
	s := &goSDKServer{opts: opts}
	s.restart()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if r.Method == http.MethodDelete {
			s.deletes.Add(1)
		}
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *goSDKServer) restart() {
	srv := newGoSDKMCPServer("go-sdk-peer")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &s.opts)
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func TestGoSDKPeer(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts mcp.StreamableHTTPOptions
	}{
		{"sse", mcp.StreamableHTTPOptions{}},
		{"json", mcp.StreamableHTTPOptions{JSONResponse: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			srv := newGoSDKServer(t, mode.opts)
			d := startDesktop(t, srv.URL, nil)
			d.onRequest = func(m *jsonrpc.Message) any {
				if m.Method == "sampling/createMessage" {
					return map[string]any{"role": "assistant", "model": "test-model", "content": map[string]any{"type": "text", "text": "sampled: 42"}}
				}
				return nil
			}
			init := d.initialize(map[string]any{"sampling": map[string]any{}})
			if !strings.Contains(string(init), "go-sdk-peer") {
				t.Fatalf("initialize result does not name the server: %s", init)
			}
			if d.relay.c.SessionID() == "" {
				t.Fatal("no session id captured from the initialize response")
			}
			if pv := d.relay.c.ProtocolVersion(); pv != "2025-11-25" {
				t.Fatalf("negotiated protocol version %q", pv)
			}
			list := d.call("tools/list", nil)
			for _, name := range []string{"echo", "slow", "ask"} {
				if !strings.Contains(string(list), `"`+name+`"`) {
					t.Errorf("tools/list lacks %s: %s", name, list)
				}
			}
			if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}})); got != "hi" {
				t.Errorf("echo = %q", got)
			}
			// Progress flows in order before the result.
			res := d.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 5}, "_meta": map[string]any{"progressToken": "p1"}})
			if got := toolText(t, res); got != "done 5" {
				t.Errorf("slow = %q", got)
			}
			prog := d.notifications("notifications/progress")
			if mode.name == "sse" {
				if len(prog) != 5 {
					t.Fatalf("got %d progress notifications, want 5", len(prog))
				}
				for i, p := range prog {
					var pp struct{ Progress float64 }
					json.Unmarshal(p.Params, &pp)
					if pp.Progress != float64(i+1) {
						t.Errorf("progress %d out of order: %v", i, pp.Progress)
					}
				}
			}
			// A server-to-client request (sampling) answered by the desktop.
			if got := toolText(t, d.call("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"question": "meaning?"}})); got != "sampled: 42" {
				t.Errorf("ask = %q", got)
			}
			// Session expiry: the server forgets every session; the next call
			// still succeeds, on a new session, without the desktop noticing.
			old := d.relay.c.SessionID()
			srv.restart()
			if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "after restart"}})); got != "after restart" {
				t.Errorf("echo after restart = %q", got)
			}
			if now := d.relay.c.SessionID(); now == "" || now == old {
				t.Errorf("session id after expiry = %q (old %q)", now, old)
			}
			d.close()
			if srv.deletes.Load() == 0 {
				t.Error("no DELETE sent on stdin EOF")
			}
			for id, n := range d.responseCounts() {
				if n != 1 {
					t.Errorf("request %s got %d responses", id, n)
				}
			}
		})
	}
}

// newGoSDKMCPServer is a go-sdk MCP server with the tools the relay tests
// call: echo, slow (progress) and ask (a sampling request to the client).
func newGoSDKMCPServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	type slowIn struct {
		Steps int `json:"steps"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "reports progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps; i++ {
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps)})
			}
			time.Sleep(5 * time.Millisecond)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("done %d", in.Steps)}}}, nil, nil
	})
	type askIn struct {
		Question string `json:"question"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "asks the client's model"}, func(ctx context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Question}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	return srv
}
