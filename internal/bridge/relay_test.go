package bridge

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/faultproxy"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// startDemo serves our own server side with the demo tools.
func startDemo(t *testing.T, opts server.Options) (string, *server.Manager) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	url, mgr, stop, err := demo.Start(context.Background(), "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, mgr
}

func checkExactlyOnce(t *testing.T, d *desktop, ids ...json.RawMessage) {
	t.Helper()
	counts := d.responseCounts()
	for _, id := range ids {
		if n := counts[jsonrpc.IDKey(id)]; n != 1 {
			t.Errorf("request %s got %d responses, want 1", id, n)
		}
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("request %s got %d responses", id, n)
		}
	}
}

func TestOwnServerSSEAndJSON(t *testing.T) {
	for _, jsonMode := range []bool{false, true} {
		name := "sse"
		if jsonMode {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			url, mgr := startDemo(t, server.Options{JSONResponse: jsonMode, EventStore: server.NewMemoryEventStore()})
			d := startDesktop(t, url, nil)
			d.initialize(nil)
			if got := toolText(t, d.call("tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1.5, "b": 2}})); got != "3.5" {
				t.Errorf("add = %q", got)
			}
			if mgr.SessionCount() != 1 {
				t.Errorf("sessions = %d", mgr.SessionCount())
			}
			d.close()
			if n := mgr.SessionCount(); n != 0 {
				t.Errorf("sessions after stdin EOF = %d, want 0 (DELETE)", n)
			}
			checkExactlyOnce(t, d)
		})
	}
}

// TestServerClosesStream: the server ends a request's stream before the
// response (the 2025-11-25 polling pattern, with retry:); the bridge resumes
// with GET + Last-Event-ID and delivers everything once, in order.
func TestServerClosesStream(t *testing.T) {
	url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore(), Retry: 20 * time.Millisecond})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	res := d.call("tools/call", map[string]any{"name": "drop", "arguments": map[string]any{"steps": 3}, "_meta": map[string]any{"progressToken": "d"}})
	if got := toolText(t, res); !strings.Contains(got, "survived the drop") {
		t.Errorf("drop = %q", got)
	}
	assertProgress(t, d.notifications("notifications/progress"), "d", 4)
	resumed := false
	for _, r := range proxy.Requests() {
		resumed = resumed || (r.Method == "GET" && r.LastEventID != "")
	}
	if !resumed {
		t.Error("no GET with Last-Event-ID")
	}
	checkExactlyOnce(t, d)
}

// TestResetMidStream: the connection is reset in the middle of a request's
// stream; the bridge resumes it.
func TestResetMidStream(t *testing.T) {
	url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore()})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method == "POST" && strings.Contains(string(r.Body), `"slow"`) {
			return faultproxy.Fault{CutAfterEvents: 3}
		}
		return faultproxy.Fault{}
	})
	res := d.call("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 6, "delayMs": 30}, "_meta": map[string]any{"progressToken": "s"}})
	if got := toolText(t, res); !strings.Contains(got, "done") {
		t.Errorf("slow = %q", got)
	}
	assertProgress(t, d.notifications("notifications/progress"), "s", 6)
	checkExactlyOnce(t, d)
}

// TestResetWithoutEventIDs: a stream without event ids cannot be resumed;
// the request gets a JSON-RPC error (never silence) and the bridge goes on.
func TestResetWithoutEventIDs(t *testing.T) {
	url, _ := startDemo(t, server.Options{}) // no event store: no ids
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method == "POST" && strings.Contains(string(r.Body), `"slow"`) {
			return faultproxy.Fault{CutAfterEvents: 1}
		}
		return faultproxy.Fault{}
	})
	m := d.await(d.request("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 5, "delayMs": 20}, "_meta": map[string]any{"progressToken": "x"}}))
	if m.Error == nil || !strings.Contains(m.Error.Message, "lost") {
		t.Fatalf("want an error saying the connection was lost, got %s", m.Raw)
	}
	proxy.SetRule(nil)
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "ok"}})); got != "ok" {
		t.Errorf("echo after the loss = %q", got)
	}
	checkExactlyOnce(t, d)
}

// TestSessionExpiry: the server forgets the session; the bridge replays
// initialize and initialized, then resends the request that met the 404.
func TestSessionExpiry(t *testing.T) {
	url, mgr := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(map[string]any{"sampling": map[string]any{}})
	old := d.relay.c.SessionID()
	mgr.TerminateAll()
	var ids []json.RawMessage
	for i := 0; i < 5; i++ { // several at once: one re-initialization only
		ids = append(ids, d.request("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}}))
	}
	for _, id := range ids {
		if m := d.await(id); m.Error != nil {
			t.Fatalf("call after expiry failed: %s", m.Raw)
		}
	}
	if d.relay.c.SessionID() == old {
		t.Fatal("session id did not change")
	}
	inits := 0
	var initBodies []string
	for _, r := range proxy.Requests() {
		if r.Method == "POST" && strings.Contains(string(r.Body), `"initialize"`) {
			inits++
			initBodies = append(initBodies, string(r.Body))
		}
	}
	if inits != 2 {
		t.Errorf("initialize sent %d times, want 2 (the client's and one replay)", inits)
	}
	if len(initBodies) == 2 && !strings.Contains(initBodies[1], `"sampling"`) {
		t.Errorf("the replayed initialize lost the client's capabilities: %s", initBodies[1])
	}
	checkExactlyOnce(t, d, ids...)
}

// TestHTTPErrors: statuses become JSON-RPC errors with useful text; an HTML
// page from a gateway is reduced to its title.
func TestHTTPErrors(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	cases := []struct {
		fault faultproxy.Fault
		want  []string
	}{
		{faultproxy.Fault{Status: 502, ContentType: "text/html", Body: "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"}, []string{"502", "Bad Gateway", "HTML"}},
		{faultproxy.Fault{Status: 401, ContentType: "application/json", Body: `{"error":"invalid_token"}`}, []string{"401", "credentials"}},
		{faultproxy.Fault{Status: 403}, []string{"403", "credentials"}},
		{faultproxy.Fault{Status: 429, Header: http.Header{"Retry-After": {"7"}}}, []string{"429", "7s"}},
		{faultproxy.Fault{Status: 200, ContentType: "text/plain", Body: "hello"}, []string{"unexpected content type"}},
		{faultproxy.Fault{Status: 200, ContentType: "application/json", Body: `{"jsonrpc":"2.0","id":`}, []string{"invalid JSON"}},
	}
	for _, c := range cases {
		proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
			if r.Method == "POST" {
				return c.fault
			}
			return faultproxy.Fault{}
		})
		m := d.await(d.request("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}}))
		if m.Error == nil {
			t.Errorf("status %d: no error: %s", c.fault.Status, m.Raw)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(m.Error.Message, w) {
				t.Errorf("status %d: error %q lacks %q", c.fault.Status, m.Error.Message, w)
			}
		}
	}
	proxy.SetRule(nil)
	d.call("ping", nil)
	checkExactlyOnce(t, d)
}

// TestGarbageSSE: an event whose data is not JSON is skipped; the rest of
// the stream still arrives.
func TestGarbageSSE(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method == "POST" {
			return faultproxy.Fault{Garbage: "data: {not json\n\n: comment\n\nevent: weird\ndata: 1\n\nretry: soon\n\n"}
		}
		return faultproxy.Fault{}
	})
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "through garbage"}})); got != "through garbage" {
		t.Errorf("echo = %q", got)
	}
	checkExactlyOnce(t, d)
}

// TestConnectionRefusedAtStart: no server at all; initialize gets a clear
// error and the bridge keeps serving.
func TestConnectionRefusedAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := startDesktop(t, "http://"+addr+"/mcp", nil)
	m := d.await(d.request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}))
	if m.Error == nil || !strings.Contains(m.Error.Message, "connection refused") {
		t.Fatalf("initialize: %s", m.Raw)
	}
	m = d.await(d.request("ping", nil))
	if m.Error == nil {
		t.Fatalf("ping without a server succeeded?")
	}
	checkExactlyOnce(t, d)
}

// TestBadInput: lines that are not JSON-RPC get clear errors and lose
// nothing around them.
func TestBadInput(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	d := startDesktop(t, url, nil)
	d.initialize(nil)
	bad := []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, jsonrpc.CodeParseError},
		{"\xff\xfe garbage", jsonrpc.CodeParseError},
		{`"just a string"`, jsonrpc.CodeInvalidRequest},
		{`[{"jsonrpc":"2.0","id":90,"method":"ping"}]`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":91}`, jsonrpc.CodeInvalidRequest},
	}
	for _, b := range bad {
		d.sendRaw([]byte(b.line))
		select {
		case m := <-d.msgs:
			if m.Error == nil || m.Error.Code != b.code {
				t.Errorf("line %q: got %s, want error %d", b.line, m.Raw, b.code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %q", b.line)
		}
	}
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "still fine"}})); got != "still fine" {
		t.Errorf("echo = %q", got)
	}
}

// TestDuplicateID: a second request with an id still in flight is refused;
// the first still gets its answer.
func TestDuplicateID(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	d := startDesktop(t, url, nil)
	d.initialize(nil)
	slow, _ := jsonrpc.NewRequest(json.RawMessage(`"dup"`), "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 3, "delayMs": 100}})
	d.send(slow)
	time.Sleep(50 * time.Millisecond)
	d.send(slow)
	m1 := d.await(json.RawMessage(`"dup"`))
	m2 := d.await(json.RawMessage(`"dup"`))
	errs := 0
	for _, m := range []*jsonrpc.Message{m1, m2} {
		if m.Error != nil && strings.Contains(m.Error.Message, "duplicate") {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("want one duplicate-id error and one result, got %s and %s", m1.Raw, m2.Raw)
	}
}

// TestCancellation: notifications/cancelled reaches the server, the tool
// stops, and no late response reaches the client.
func TestCancellation(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	id := d.request("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 50, "delayMs": 20}})
	time.Sleep(100 * time.Millisecond)
	d.notify("notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": "user gave up"})
	// A ping sent after the cancel is answered while the cancelled call is
	// still winding down: messages never queue behind each other.
	d.call("ping", nil)
	time.Sleep(300 * time.Millisecond)
	if n := d.responseCounts()[jsonrpc.IDKey(id)]; n != 0 {
		t.Errorf("cancelled request got %d responses, want 0", n)
	}
	sawCancel := false
	for _, r := range proxy.Requests() {
		sawCancel = sawCancel || strings.Contains(string(r.Body), "notifications/cancelled")
	}
	if !sawCancel {
		t.Error("notifications/cancelled was not relayed")
	}
}

// TestToolFilter: a filtered tool is left out of tools/list and calls to it
// never reach the server.
func TestToolFilter(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, func(_ *ClientOptions, r *RelayOptions) {
		r.ToolAllowed = func(name string) bool { return name != "big" && name != "drop" }
	})
	d.initialize(nil)
	list := string(d.call("tools/list", nil))
	if strings.Contains(list, `"big"`) || strings.Contains(list, `"drop"`) || !strings.Contains(list, `"echo"`) {
		t.Errorf("filtered tools/list: %s", list)
	}
	m := d.await(d.request("tools/call", map[string]any{"name": "big", "arguments": map[string]any{"bytes": 10}}))
	if m.Error == nil || !strings.Contains(m.Error.Message, "not available") {
		t.Errorf("call to a filtered tool: %s", m.Raw)
	}
	for _, r := range proxy.Requests() {
		if strings.Contains(string(r.Body), `"big"`) {
			t.Error("a call to a filtered tool reached the server")
		}
	}
}

// TestLargeResult: a 50 MB tool result passes through intact.
func TestLargeResult(t *testing.T) {
	if testing.Short() {
		t.Skip("large message")
	}
	url, _ := startDemo(t, server.Options{})
	d := startDesktop(t, url, nil)
	d.timeout = 5 * time.Minute // the race detector makes 50 MB slow
	d.initialize(nil)
	const size = 50 << 20
	got := toolText(t, d.call("tools/call", map[string]any{"name": "big", "arguments": map[string]any{"bytes": size}}))
	if len(got) != size {
		t.Fatalf("big result has %d bytes, want %d", len(got), size)
	}
}

// TestStatelessServer: a server without sessions (go-sdk-style stateless or
// ours) works; no GET stream, no DELETE needed.
func TestStatelessServer(t *testing.T) {
	url, mgr := startDemo(t, server.Options{Stateless: true})
	d := startDesktop(t, url, nil)
	d.initialize(nil)
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "s"}})); got != "s" {
		t.Errorf("echo = %q", got)
	}
	if d.relay.c.SessionID() != "" {
		t.Error("stateless server gave a session id?")
	}
	d.close()
	if mgr.SessionCount() != 0 {
		t.Error("stateless manager kept sessions")
	}
}

// TestCookiesKept: a cookie the server sets (load-balancer stickiness) is sent
// back on every later request of the session.
func TestCookiesKept(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	var withCookie, without int
	var mu sync.Mutex
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if c, err := r.Cookie("lb"); err == nil && c.Value == "node-7" {
			withCookie++
		} else {
			without++
		}
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "lb", Value: "node-7", Path: "/"})
		faultproxy.Forward(w, r, url)
	}))
	defer front.Close()
	hc, err := NewHTTPClient(TransportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := startDesktop(t, front.URL+"/mcp", func(c *ClientOptions, _ *RelayOptions) { c.HTTPClient = hc })
	d.initialize(nil)
	d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "x"}})
	d.close()
	mu.Lock()
	defer mu.Unlock()
	if without != 1 || withCookie < 2 {
		t.Errorf("requests without the cookie: %d (want only the first), with: %d", without, withCookie)
	}
}

// TestImpatientClient: a client that sends initialized and a request without
// waiting for the initialize response (against rule L11) still gets a working
// session: the bridge holds them until the session exists.
func TestImpatientClient(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	initID := d.request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	d.notify("notifications/initialized", nil)
	listID := d.request("tools/list", nil)
	if m := d.await(initID); m.Error != nil {
		t.Fatalf("initialize: %s", m.Raw)
	}
	if m := d.await(listID); m.Error != nil {
		t.Fatalf("tools/list: %s", m.Raw)
	}
	for _, r := range proxy.Requests() {
		if r.Method == "POST" && !strings.Contains(string(r.Body), `"initialize"`) && r.Header.Get("Mcp-Session-Id") == "" {
			t.Errorf("a message went out without the session id: %s", r.Body)
		}
	}
	checkExactlyOnce(t, d)
}
