package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

// legacyPeer is the official Go SDK's 2024-11-05 HTTP+SSE server (SSEHandler),
// behind a wrapper that checks every request carries the configured headers
// and counts what arrives.
type legacyPeer struct {
	*httptest.Server
	gets, posts, deletes atomic.Int64
	openGETs             atomic.Int64
	badHeaders           atomic.Int64
	blockStarted         chan struct{} // a "block" tool call has begun
	release              chan struct{} // lets "block" calls return
	releaseOnce          sync.Once

	mu      sync.Mutex
	getConn net.Conn // the connection of the latest GET (the session's stream)
}

type connKey struct{}

// killStream closes the connection of the session's stream, and only that
// one, as a network failure or a proxy timeout would.
func (p *legacyPeer) killStream() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.getConn.Close()
}

func (p *legacyPeer) releaseBlocked() { p.releaseOnce.Do(func() { close(p.release) }) }

func newLegacyPeer(t *testing.T) *legacyPeer {
	t.Helper()
	p := &legacyPeer{blockStarted: make(chan struct{}, 8), release: make(chan struct{})}
	srv := newGoSDKMCPServer("go-sdk-sse-peer")
	mcp.AddTool(srv, &mcp.Tool{Name: "block", Description: "waits until released"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p.blockStarted <- struct{}{}
		select {
		case <-p.release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil, nil
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "secret-key" || r.Header.Get("Authorization") != "Bearer tok" {
			p.badHeaders.Add(1)
		}
		switch r.Method {
		case http.MethodGet:
			p.gets.Add(1)
			p.mu.Lock()
			p.getConn = r.Context().Value(connKey{}).(net.Conn)
			p.mu.Unlock()
			p.openGETs.Add(1)
			defer p.openGETs.Add(-1)
		case http.MethodPost:
			p.posts.Add(1)
		case http.MethodDelete:
			p.deletes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	p.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	p.Start()
	t.Cleanup(func() {
		p.releaseBlocked()
		p.Close()
	})
	return p
}

func legacyHeaders(c *ClientOptions, _ *RelayOptions) {
	c.Header = func(context.Context) (http.Header, error) {
		return http.Header{"X-Api-Key": {"secret-key"}}, nil
	}
	c.Auth = &fakeAuth{token: "tok"}
}

// TestLegacySSEPeer: a server that speaks only the 2024-11-05 HTTP+SSE
// transport (rule L12) is used through the fallback: the whole session works
// as on a Streamable HTTP server, a lost stream fails the request awaiting
// it and the next request re-initializes through the fallback again.
func TestLegacySSEPeer(t *testing.T) {
	peer := newLegacyPeer(t)
	d := startDesktop(t, peer.URL+"/sse", legacyHeaders)
	d.onRequest = func(m *jsonrpc.Message) any {
		if m.Method == "sampling/createMessage" {
			return map[string]any{"role": "assistant", "model": "test-model", "content": map[string]any{"type": "text", "text": "sampled: 42"}}
		}
		return nil
	}
	init := d.initialize(map[string]any{"sampling": map[string]any{}})
	if !strings.Contains(string(init), "go-sdk-sse-peer") {
		t.Fatalf("initialize result does not name the server: %s", init)
	}
	first := d.relay.c.SessionID()
	if !strings.HasPrefix(first, "legacy-sse-") {
		t.Fatalf("session id %q: not a 2024-11-05 session", first)
	}
	if pv := d.relay.c.ProtocolVersion(); pv == "" {
		t.Error("no protocol version captured from the initialize response")
	}

	list := d.call("tools/list", nil)
	for _, name := range []string{"echo", "slow", "ask", "block"} {
		if !strings.Contains(string(list), `"`+name+`"`) {
			t.Errorf("tools/list lacks %s: %s", name, list)
		}
	}
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hi"}})); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	res := d.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 5}, "_meta": map[string]any{"progressToken": "p1"}})
	if got := toolText(t, res); got != "done 5" {
		t.Errorf("slow = %q", got)
	}
	prog := d.notifications("notifications/progress")
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
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"question": "meaning?"}})); got != "sampled: 42" {
		t.Errorf("ask = %q", got)
	}
	if n := peer.gets.Load(); n != 1 {
		t.Errorf("%d GETs for one session, want 1 (the session's one stream)", n)
	}

	// The stream dies under a request in flight: the old transport cannot
	// resume, so that request gets an error, and only one.
	id := d.request("tools/call", map[string]any{"name": "block", "arguments": map[string]any{}})
	<-peer.blockStarted
	peer.killStream()
	m := d.await(id)
	if m.Error == nil || !strings.Contains(m.Error.Message, "lost") {
		t.Fatalf("request on a dead stream: want a 'lost' error, got %s", m.Bytes())
	}
	peer.releaseBlocked() // the dead session's handler may now end
	// The next request re-initializes through the fallback, unnoticed.
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "again"}})); got != "again" {
		t.Errorf("echo after the stream died = %q", got)
	}
	if now := d.relay.c.SessionID(); now == first || !strings.HasPrefix(now, "legacy-sse-") {
		t.Errorf("session after re-initialization = %q (first %q)", now, first)
	}
	if n := peer.gets.Load(); n != 2 {
		t.Errorf("%d GETs after one re-initialization, want 2", n)
	}

	if err := d.close(); err != nil {
		t.Fatalf("relay ended with %v", err)
	}
	for id, n := range d.responseCounts() {
		if n != 1 {
			t.Errorf("request %s got %d responses", id, n)
		}
	}
	if n := peer.deletes.Load(); n != 0 {
		t.Errorf("%d DELETEs sent; the 2024-11-05 transport has none", n)
	}
	if n := peer.badHeaders.Load(); n != 0 {
		t.Errorf("%d requests lacked the configured headers", n)
	}
	// Closing stdin closed the session's stream.
	deadline := time.Now().Add(5 * time.Second)
	for peer.openGETs.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the SSE stream is still open after stdin EOF")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLegacyProbe: a test connection works against an old server too.
func TestLegacyProbe(t *testing.T) {
	peer := newLegacyPeer(t)
	opts := ClientOptions{URL: peer.URL + "/sse", Logger: testLogger(t)}
	legacyHeaders(&opts, nil)
	res, err := Probe(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerName != "go-sdk-sse-peer" || res.Tools != 4 {
		t.Errorf("probe = %+v", res)
	}
}

// TestLegacyFallbackRefused: when the URL does not offer the old transport
// either, or names an endpoint on another origin, initialize fails with a
// clear error and nothing is sent anywhere else.
func TestLegacyFallbackRefused(t *testing.T) {
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()

	sseEvent := func(event, data string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		}
	}
	for _, tc := range []struct {
		name    string
		post    int
		get     http.HandlerFunc
		want    string // in the error the desktop gets
		wantGET bool
	}{
		{"404, no SSE endpoint", http.StatusNotFound, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "HTTP 404 Not Found", true},
		{"405, stream without endpoint event", http.StatusMethodNotAllowed, sseEvent("message", `{"jsonrpc":"2.0","method":"x"}`), "HTTP 405 Method Not Allowed", true},
		{"400, GET not a stream", http.StatusBadRequest, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }, "HTTP 400 Bad Request", true},
		{"500 is no fallback", http.StatusInternalServerError, sseEvent("endpoint", "/messages"), "HTTP 500", false},
		{"endpoint on another origin", http.StatusNotFound, sseEvent("endpoint", other.URL+"/messages"), "another origin", true},
		{"endpoint on another port", http.StatusNotFound, sseEvent("endpoint", "//127.0.0.1:1/messages"), "another origin", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.Path)
				mu.Unlock()
				if r.Method == http.MethodGet {
					if r.Header.Get("Accept") != "text/event-stream" {
						t.Errorf("fallback GET Accept = %q", r.Header.Get("Accept"))
					}
					tc.get(w, r)
					return
				}
				http.Error(w, "nope", tc.post)
			}))
			defer srv.Close()
			d := startDesktop(t, srv.URL+"/mcp", nil)
			m := d.await(d.request("initialize", map[string]any{
				"protocolVersion": "2025-11-25",
				"capabilities":    map[string]any{},
				"clientInfo":      map[string]any{"name": "test-desktop", "version": "1.0"},
			}))
			if m.Error == nil || !strings.Contains(m.Error.Message, tc.want) {
				t.Fatalf("initialize: want an error with %q, got %s", tc.want, m.Bytes())
			}
			d.close()
			mu.Lock()
			defer mu.Unlock()
			want := []string{"POST /mcp"}
			if tc.wantGET {
				want = append(want, "GET /mcp")
			}
			if strings.Join(seen, ", ") != strings.Join(want, ", ") {
				t.Errorf("server saw %v, want %v", seen, want)
			}
			if n := otherHits.Load(); n != 0 {
				t.Errorf("the other origin got %d requests", n)
			}
		})
	}
}
