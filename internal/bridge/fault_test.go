package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/faultproxy"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
	"github.com/mcpbridge/mcpbridge/internal/testpeers"
)

// These tests put the relay behind the faults of real networks and servers
// and check the same four things every time: each request the desktop sent
// got exactly one response or JSON-RPC error, progress kept its order, the
// relay still serves a call afterwards, and stdout carried protocol only (the
// desktop harness fails the test on any other line).

// progressOf returns the progress values received so far for token.
func progressOf(d *desktop, token string) []float64 {
	var got []float64
	for _, m := range d.notifications("notifications/progress") {
		var p struct {
			ProgressToken any     `json:"progressToken"`
			Progress      float64 `json:"progress"`
		}
		json.Unmarshal(m.Params, &p)
		if p.ProgressToken == token {
			got = append(got, p.Progress)
		}
	}
	return got
}

// waitProgress waits until n progress notifications for token arrived (they
// may trail the response when they travel on the GET stream).
func waitProgress(t *testing.T, d *desktop, token string, n int, within time.Duration) []float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := progressOf(d, token)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertIncreasing checks that progress values came in order, each once: a
// loss may leave gaps, but never duplicates or reordering.
func assertIncreasing(t *testing.T, token string, got []float64) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("progress for %s out of order or repeated: %v", token, got)
		}
	}
}

func assertExactProgress(t *testing.T, token string, got []float64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("progress for %s: got %v, want 1..%d", token, got, n)
	}
	for i, v := range got {
		if v != float64(i+1) {
			t.Fatalf("progress for %s out of order: %v", token, got)
		}
	}
}

func slowCall(steps, delayMs int, token string) map[string]any {
	return map[string]any{"name": "slow", "arguments": map[string]any{"steps": steps, "delayMs": delayMs}, "_meta": map[string]any{"progressToken": token}}
}

func echoCall(msg string) map[string]any {
	return map[string]any{"name": "echo", "arguments": map[string]any{"message": msg}}
}

// followUp checks that the relay still serves a call.
func followUp(t *testing.T, d *desktop) {
	t.Helper()
	if got := toolText(t, d.call("tools/call", echoCall("still here"))); got != "still here" {
		t.Errorf("follow-up echo = %q", got)
	}
}

// TestGETStreamResetWithEventIDs: the GET stream (which, with a JSON-answering
// server, carries the progress of every call) is reset mid-stream; the bridge
// resumes it with Last-Event-ID and every notification arrives once, in order,
// and later server-initiated messages keep flowing on the new stream.
func TestGETStreamResetWithEventIDs(t *testing.T) {
	url, _ := startDemo(t, server.Options{JSONResponse: true, EventStore: server.NewMemoryEventStore()})
	proxy := faultproxy.New(t, url)
	var cut atomic.Bool
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method == "GET" && r.LastEventID == "" && !cut.Swap(true) {
			return faultproxy.Fault{CutAfterEvents: 3} // priming + two progress events
		}
		return faultproxy.Fault{}
	})
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	if got := toolText(t, d.call("tools/call", slowCall(6, 30, "g1"))); !strings.Contains(got, "done") {
		t.Errorf("slow = %q", got)
	}
	assertExactProgress(t, "g1", waitProgress(t, d, "g1", 6, 10*time.Second), 6)
	resumed := false
	for _, r := range proxy.Requests() {
		resumed = resumed || (r.Method == "GET" && r.LastEventID != "")
	}
	if !resumed {
		t.Error("the GET stream was not resumed with Last-Event-ID")
	}
	d.call("tools/call", slowCall(3, 10, "g2"))
	assertExactProgress(t, "g2", waitProgress(t, d, "g2", 3, 10*time.Second), 3)
	followUp(t, d)
	checkExactlyOnce(t, d)
}

// TestGETStreamResetWithoutEventIDs: without event ids the GET stream cannot
// be resumed, so what was in flight may be lost; nothing may be duplicated or
// reordered, and the reopened stream carries later messages.
func TestGETStreamResetWithoutEventIDs(t *testing.T) {
	url, _ := startDemo(t, server.Options{JSONResponse: true})
	proxy := faultproxy.New(t, url)
	var cut atomic.Bool
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method == "GET" && !cut.Swap(true) {
			return faultproxy.Fault{CutAfterEvents: 2}
		}
		return faultproxy.Fault{}
	})
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	d.call("tools/call", slowCall(6, 30, "n1"))
	time.Sleep(300 * time.Millisecond) // let what survived arrive
	got := progressOf(d, "n1")
	assertIncreasing(t, "n1", got)
	if len(got) < 2 {
		t.Errorf("progress before the cut was lost: %v", got)
	}
	gets := 0
	for _, r := range proxy.Requests() {
		if r.Method == "GET" {
			gets++
		}
	}
	if gets < 2 {
		t.Errorf("the GET stream was not reopened (%d GETs)", gets)
	}
	d.call("tools/call", slowCall(3, 10, "n2"))
	assertExactProgress(t, "n2", waitProgress(t, d, "n2", 3, 10*time.Second), 3)
	followUp(t, d)
	checkExactlyOnce(t, d)
}

// tsNoSession is what the TypeScript SDK's example servers (server-everything)
// answer for a session they do not know: 400, not 404.
var tsNoSession = faultproxy.Fault{Status: 400, ContentType: "application/json",
	Body: `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`}

// TestRestartAnswers400: the server restarts (every session forgotten) and
// answers the old session with 400 "No valid session ID" instead of 404; the
// bridge recognises it, re-initializes once and resends the request, which the
// server never processed.
func TestRestartAnswers400(t *testing.T) {
	url, mgr := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		return faultproxy.Fault{OnStatus: map[int]faultproxy.Fault{404: tsNoSession}}
	})
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	old := d.relay.c.SessionID()
	mgr.TerminateAll()
	var ids []json.RawMessage
	for i := 0; i < 3; i++ {
		ids = append(ids, d.request("tools/call", echoCall("after restart")))
	}
	for _, id := range ids {
		if m := d.await(id); m.Error != nil {
			t.Fatalf("call after the restart failed: %s", m.Raw)
		}
	}
	if d.relay.c.SessionID() == old {
		t.Error("no new session")
	}
	followUp(t, d)
	checkExactlyOnce(t, d, ids...)
}

// TestRestartAnswersBare400: a server that answers an unknown session with a
// 400 that does not say why cannot be told from a request the server
// dislikes; the bridge must then say what the server said, promptly, and not
// hang or resend.
func TestRestartAnswersBare400(t *testing.T) {
	url, mgr := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	bare := faultproxy.Fault{Status: 400, ContentType: "text/plain", Body: "Bad Request"}
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		return faultproxy.Fault{OnStatus: map[int]faultproxy.Fault{404: bare}}
	})
	d := startDesktop(t, proxy.URL, nil)
	d.timeout = 5 * time.Second
	d.initialize(nil)
	mgr.TerminateAll()
	m := d.await(d.request("tools/call", echoCall("x")))
	if m.Error == nil || !strings.Contains(m.Error.Message, "400") {
		t.Fatalf("want a 400 error, got %s", m.Raw)
	}
	checkExactlyOnce(t, d)
}

// TestEverythingRestart: the real server-everything is replaced by a fresh
// process (a restart: it knows no sessions and answers the old one with 400);
// the bridge re-initializes and the call succeeds.
func TestEverythingRestart(t *testing.T) {
	first := testpeers.Everything(t)
	proxy := faultproxy.New(t, first)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	if got := toolText(t, d.call("tools/call", echoCall("before"))); !strings.Contains(got, "before") {
		t.Errorf("echo = %q", got)
	}
	old := d.relay.c.SessionID()
	second := testpeers.Everything(t)
	if err := proxy.SetTarget(second); err != nil {
		t.Fatal(err)
	}
	proxy.CloseClientConnections() // the old server's streams die with it
	// Let the bridge's transport see its idle connections close: a request
	// written onto a connection in the very instant it dies may have reached
	// the old server, and such a request is reported, never resent (see
	// docs/reliability.md). This test is about the new server's 400.
	time.Sleep(200 * time.Millisecond)
	if got := toolText(t, d.call("tools/call", echoCall("after"))); !strings.Contains(got, "after") {
		t.Errorf("echo after restart = %q", got)
	}
	if d.relay.c.SessionID() == old {
		t.Error("no new session after the restart")
	}
	res := d.call("tools/call", map[string]any{"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 0.3, "steps": 3}, "_meta": map[string]any{"progressToken": "r"}})
	if got := toolText(t, res); !strings.Contains(got, "completed") {
		t.Errorf("long-running = %q", got)
	}
	assertExactProgress(t, "r", progressOf(d, "r"), 3)
	checkExactlyOnce(t, d)
}

// TestServerErrorPages: gateway and rate-limit answers, and malformed
// answers, become one clear JSON-RPC error each; the relay goes on.
func TestServerErrorPages(t *testing.T) {
	url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore()})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	soon := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name  string
		fault faultproxy.Fault
		want  []string
	}{
		{"503 html", faultproxy.Fault{Status: 503, ContentType: "text/html; charset=utf-8", Body: "<!DOCTYPE html><html><head><title>Service Temporarily Unavailable</title></head><body><h1>503</h1></body></html>"}, []string{"503", "Service Temporarily Unavailable", "HTML"}},
		{"503 html untitled", faultproxy.Fault{Status: 503, ContentType: "text/html", Body: "<html><body>down for maintenance</body></html>"}, []string{"503", "HTML page"}},
		{"429 seconds", faultproxy.Fault{Status: 429, Header: http.Header{"Retry-After": {"30"}}}, []string{"429", "retry after 30s"}},
		{"429 date", faultproxy.Fault{Status: 429, Header: http.Header{"Retry-After": {soon}}}, []string{"429", "retry after"}},
		{"wrong content type", faultproxy.Fault{Status: 200, ContentType: "text/html", Body: "<html>login page</html>"}, []string{"unexpected content type", "text/html"}},
		{"no content type", faultproxy.Fault{Status: 200, Body: `{"jsonrpc":"2.0","id":1,"result":{}}`}, []string{"content type"}},
		{"truncated json", faultproxy.Fault{Status: 200, ContentType: "application/json", Body: `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"te`}, []string{"invalid JSON"}},
		{"empty sse", faultproxy.Fault{Status: 200, ContentType: "text/event-stream", Body: ""}, []string{"lost"}},
		{"truncated sse", faultproxy.Fault{Status: 200, ContentType: "text/event-stream", Body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"}, []string{"lost"}},
	}
	for _, c := range cases {
		proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
			if r.Method == "POST" && strings.Contains(string(r.Body), "tools/call") {
				return c.fault
			}
			return faultproxy.Fault{}
		})
		m := d.await(d.request("tools/call", echoCall("x")))
		if m.Error == nil {
			t.Errorf("%s: no error: %s", c.name, m.Raw)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(m.Error.Message, w) {
				t.Errorf("%s: error %q lacks %q", c.name, m.Error.Message, w)
			}
		}
		if strings.Contains(m.Error.Message, "<") {
			t.Errorf("%s: markup leaked into the error: %q", c.name, m.Error.Message)
		}
	}
	proxy.SetRule(nil)
	followUp(t, d)
	checkExactlyOnce(t, d)
}

// TestTruncatedSSE: a response stream that ends in the middle of an event. With
// event ids the bridge resumes from the last complete event and the partial
// one is replayed whole; without them the request is reported lost.
func TestTruncatedSSE(t *testing.T) {
	t.Run("with ids", func(t *testing.T) {
		url, _ := startDemo(t, server.Options{EventStore: server.NewMemoryEventStore()})
		proxy := faultproxy.New(t, url)
		d := startDesktop(t, proxy.URL, nil)
		d.initialize(nil)
		proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
			if r.Method == "POST" && strings.Contains(string(r.Body), `"slow"`) {
				return faultproxy.Fault{TruncateAfterEvents: 3}
			}
			return faultproxy.Fault{}
		})
		if got := toolText(t, d.call("tools/call", slowCall(5, 20, "t"))); !strings.Contains(got, "done") {
			t.Errorf("slow = %q", got)
		}
		assertExactProgress(t, "t", progressOf(d, "t"), 5)
		followUp(t, d)
		checkExactlyOnce(t, d)
	})
	t.Run("without ids", func(t *testing.T) {
		url, _ := startDemo(t, server.Options{})
		proxy := faultproxy.New(t, url)
		d := startDesktop(t, proxy.URL, nil)
		d.initialize(nil)
		proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
			if r.Method == "POST" && strings.Contains(string(r.Body), `"slow"`) {
				return faultproxy.Fault{TruncateAfterEvents: 2}
			}
			return faultproxy.Fault{}
		})
		m := d.await(d.request("tools/call", slowCall(5, 20, "u")))
		if m.Error == nil || !strings.Contains(m.Error.Message, "lost") {
			t.Fatalf("want a lost-connection error, got %s", m.Raw)
		}
		assertExactProgress(t, "u", progressOf(d, "u"), 2)
		proxy.SetRule(nil)
		followUp(t, d)
		checkExactlyOnce(t, d)
	})
}

// TestSlowServer: headers that come seconds late are waited for. The bridge
// has no total timeout; short dial and keep-alive settings (which bound
// connecting and dead peers, not slow answers) must not cut a slow response.
func TestSlowServer(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, func(c *ClientOptions, _ *RelayOptions) {
		hc, err := NewHTTPClient(TransportOptions{DialTimeout: 200 * time.Millisecond, KeepAlive: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		c.HTTPClient = hc
	})
	d.initialize(nil)
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method == "POST" && strings.Contains(string(r.Body), "tools/call") {
			return faultproxy.Fault{Delay: 1500 * time.Millisecond}
		}
		return faultproxy.Fault{}
	})
	start := time.Now()
	// A ping is not held behind the slow call.
	slow := d.request("tools/call", slowCall(3, 300, "slow"))
	d.call("ping", nil)
	if time.Since(start) > time.Second {
		t.Errorf("a ping waited %s behind a slow call", time.Since(start))
	}
	m := d.await(slow)
	if m.Error != nil {
		t.Fatalf("slow call failed: %s", m.Raw)
	}
	if el := time.Since(start); el < 2*time.Second {
		t.Errorf("slow call returned after %s; the delay was not applied?", el)
	}
	assertExactProgress(t, "slow", progressOf(d, "slow"), 3)
	proxy.SetRule(nil)
	followUp(t, d)
	checkExactlyOnce(t, d)
}

// bodyStaller sits in front of the demo server and, for POSTs whose body is
// larger than 1 MB, reads 1 KB and then either stalls (reads nothing more and
// never answers) or answers 413 at once.
func bodyStaller(t *testing.T, target string, answer413 bool) (string, func() int) {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var stalled atomic.Int64
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.ContentLength > 1<<20 {
			io.ReadFull(r.Body, make([]byte, 1024))
			if answer413 {
				w.Header().Set("Connection", "close")
				http.Error(w, "request entity too large", http.StatusRequestEntityTooLarge)
				return
			}
			stalled.Add(1)
			// A server that does not read the body does not notice the
			// client leaving either: only the end of the test frees it.
			<-quit
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(quit) }) // runs before srv.Close
	return srv.URL + u.Path, func() int { return int(stalled.Load()) }
}

// TestServerStopsReadingBody: a server that stops reading a large request
// body holds only that request: other requests go on, the client's cancel
// frees it, and a server that answers early (413) gets its answer relayed.
func TestServerStopsReadingBody(t *testing.T) {
	big := strings.Repeat("y", 8<<20)
	t.Run("stalls", func(t *testing.T) {
		url, _ := startDemo(t, server.Options{})
		front, stalled := bodyStaller(t, url, false)
		d := startDesktop(t, front, nil)
		d.initialize(nil)
		id := d.request("tools/call", echoCall(big))
		deadline := time.Now().Add(10 * time.Second)
		for stalled() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if stalled() == 0 {
			t.Fatal("the large request never reached the server")
		}
		followUp(t, d) // not queued behind the stuck upload
		d.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "stuck"})
		followUp(t, d)
		// The cancelled request's upload is abandoned: the relay exits
		// promptly on stdin EOF (close fails the test after 10 s).
		d.close()
		if n := d.responseCounts()[jsonrpc.IDKey(id)]; n != 0 {
			t.Errorf("cancelled request got %d responses", n)
		}
	})
	t.Run("answers 413", func(t *testing.T) {
		url, _ := startDemo(t, server.Options{})
		front, _ := bodyStaller(t, url, true)
		d := startDesktop(t, front, nil)
		d.initialize(nil)
		m := d.await(d.request("tools/call", echoCall(big)))
		if m.Error == nil || !strings.Contains(m.Error.Message, "413") {
			// A server that closes the connection while the body is still
			// being written may leave only a broken pipe to report: still one
			// clear error, never silence.
			if m.Error == nil {
				t.Fatalf("want an error, got %s", truncate(m.Raw))
			}
			t.Logf("error without the status: %s", m.Error.Message)
		}
		followUp(t, d)
		checkExactlyOnce(t, d)
	})
}

// TestDNSFailure: a host name that does not resolve gives a clear error at
// once (a name under .invalid never resolves), and the relay keeps answering.
func TestDNSFailure(t *testing.T) {
	d := startDesktop(t, "http://mcp.invalid/mcp", nil)
	d.timeout = 10 * time.Second
	m := d.await(d.request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}))
	if m.Error == nil || !strings.Contains(m.Error.Message, "does not resolve") || !strings.Contains(m.Error.Message, "mcp.invalid") {
		t.Fatalf("initialize: %s", m.Raw)
	}
	if m := d.await(d.request("ping", nil)); m.Error == nil {
		t.Fatal("ping to an unresolvable host succeeded?")
	}
	checkExactlyOnce(t, d)
}

// restartableDemo is the demo server on a fixed loopback address that can be
// stopped and started again, as a server process that restarts.
type restartableDemo struct {
	t    *testing.T
	addr string
	url  string
	mu   sync.Mutex
	stop func()
}

func newRestartableDemo(t *testing.T) *restartableDemo {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &restartableDemo{t: t, addr: addr}
	s.start()
	t.Cleanup(s.down)
	return s
}

func (s *restartableDemo) start() {
	s.t.Helper()
	var err error
	for i := 0; i < 50; i++ { // the port may linger for a moment after a stop
		var url string
		var stop func()
		url, _, stop, err = demo.Start(context.Background(), s.addr, server.Options{Logger: testLogger(s.t)})
		if err == nil {
			s.mu.Lock()
			s.url, s.stop = url, stop
			s.mu.Unlock()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("restarting the server on %s: %v", s.addr, err)
}

func (s *restartableDemo) down() {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// TestConnectionRefusedMidSession: the server goes away mid-session and comes
// back on the same port. A request sent while nothing listens never reached
// the server, so the bridge resends it until the server is back (then meets
// the unknown session, re-initializes and resends again); it succeeds, once.
// When the server stays away, the request gets a clear error instead.
func TestConnectionRefusedMidSession(t *testing.T) {
	srv := newRestartableDemo(t)
	d := startDesktop(t, srv.url, func(_ *ClientOptions, r *RelayOptions) {
		r.Retry = Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Attempts: 40}
	})
	d.initialize(nil)
	followUp(t, d)

	srv.down()
	// Let the client see the server close its idle connections (it does
	// within a millisecond or so): a request written onto such a connection
	// in the meantime is not provably unreceived, see
	// TestServerVanishesMidRequest.
	time.Sleep(100 * time.Millisecond)
	id := d.request("tools/call", echoCall("while down"))
	time.Sleep(300 * time.Millisecond)
	srv.start()
	m := d.await(id)
	if m.Error != nil {
		t.Fatalf("request sent while the server was down: %s", m.Raw)
	}
	if got := toolText(t, m.Result); got != "while down" {
		t.Errorf("echo = %q", got)
	}
	followUp(t, d)

	t.Run("stays down", func(t *testing.T) {
		d2 := startDesktop(t, srv.url, nil) // 3 quick attempts
		d2.initialize(nil)
		srv.down()
		time.Sleep(100 * time.Millisecond)
		m := d2.await(d2.request("tools/call", echoCall("x")))
		if m.Error == nil || !strings.Contains(m.Error.Message, "connection refused") {
			t.Fatalf("want a connection-refused error, got %s", m.Raw)
		}
		srv.start()
		followUp(t, d2)
		checkExactlyOnce(t, d2)
	})
	checkExactlyOnce(t, d)
}

// TestServerVanishesMidRequest: the server reads a request and drops the
// connection without answering (a crash, or a restart racing a reused
// connection). The server may have acted on it, so the bridge must not
// resend it; it reports once, clearly, and goes on.
func TestServerVanishesMidRequest(t *testing.T) {
	up, _ := startDemo(t, server.Options{})
	u, _ := url.Parse(up)
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"vanish"`) {
			calls.Add(1)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d := startDesktop(t, srv.URL+u.Path, nil)
	d.initialize(nil)
	m := d.await(d.request("tools/call", echoCall("vanish")))
	if m.Error == nil || !strings.Contains(m.Error.Message, "closed the connection before answering") {
		t.Fatalf("want a clear error, got %s", m.Raw)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server received the request %d times, want 1 (never resent)", n)
	}
	followUp(t, d)
	checkExactlyOnce(t, d)
}

// TestSilentlyDeadGETStream: after a laptop sleeps, or behind a hung proxy,
// the GET stream's connection can stay open while nothing comes through it;
// TCP keep-alive cannot see that when something still acknowledges packets.
// The bridge notices the silence (no event, no keep-alive comment) after
// ListenIdleTimeout, reopens the stream with Last-Event-ID and gets what the
// server sent meanwhile, once and in order.
func TestSilentlyDeadGETStream(t *testing.T) {
	run := func(t *testing.T, idle time.Duration) (*desktop, *faultproxy.Proxy) {
		url, _ := startDemo(t, server.Options{JSONResponse: true, EventStore: server.NewMemoryEventStore()})
		proxy := faultproxy.New(t, url)
		var stalled atomic.Bool
		proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
			if r.Method == "GET" && r.LastEventID == "" && !stalled.Swap(true) {
				return faultproxy.Fault{Stall: true, StallAfterEvents: 1} // the priming event, then silence
			}
			return faultproxy.Fault{}
		})
		d := startDesktop(t, proxy.URL, func(c *ClientOptions, _ *RelayOptions) {
			c.ListenIdleTimeout = idle
		})
		d.initialize(nil)
		// The response comes on the POST; the progress travels on the GET
		// stream, into the silence.
		d.call("tools/call", slowCall(3, 10, "z"))
		return d, proxy
	}
	t.Run("detected", func(t *testing.T) {
		d, proxy := run(t, 300*time.Millisecond)
		assertExactProgress(t, "z", waitProgress(t, d, "z", 3, 10*time.Second), 3)
		resumed := false
		for _, r := range proxy.Requests() {
			resumed = resumed || (r.Method == "GET" && r.LastEventID != "")
		}
		if !resumed {
			t.Error("the dead GET stream was not reopened with Last-Event-ID")
		}
		d.call("tools/call", slowCall(2, 10, "z2"))
		assertExactProgress(t, "z2", waitProgress(t, d, "z2", 2, 10*time.Second), 2)
		followUp(t, d)
		checkExactlyOnce(t, d)
	})
	t.Run("without an idle timeout", func(t *testing.T) {
		// The reason the timeout exists: the stream stays dead.
		d, _ := run(t, -1)
		if got := waitProgress(t, d, "z", 1, time.Second); len(got) != 0 {
			t.Errorf("progress arrived through a stalled stream? %v", got)
		}
		followUp(t, d)
	})
}

// TestGETStreamRetryAfter: a GET stream refused with 429 and Retry-After is
// reopened no sooner than the server asked, and requests are not held up
// meanwhile.
func TestGETStreamRetryAfter(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	proxy := faultproxy.New(t, url)
	var refused atomic.Bool
	var mu sync.Mutex
	var gets []time.Time
	proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
		if r.Method != "GET" {
			return faultproxy.Fault{}
		}
		mu.Lock()
		gets = append(gets, time.Now())
		mu.Unlock()
		if !refused.Swap(true) {
			return faultproxy.Fault{Status: 429, Header: http.Header{"Retry-After": {"1"}}, ContentType: "text/plain", Body: "slow down"}
		}
		return faultproxy.Fault{}
	})
	d := startDesktop(t, proxy.URL, nil)
	d.initialize(nil)
	followUp(t, d)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(gets)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gets) < 2 {
		t.Fatalf("the GET stream was not reopened after the 429 (%d GETs)", len(gets))
	}
	if gap := gets[1].Sub(gets[0]); gap < 900*time.Millisecond {
		t.Errorf("GET reopened %s after a 429 asking for 1s", gap)
	}
	checkExactlyOnce(t, d)
}
