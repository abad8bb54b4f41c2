package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

func TestHTTPValidation(t *testing.T) {
	_, url := startServer(t, newTestHandler(nil), Options{})
	sid := initialize(t, url)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tc := range []struct {
		name   string
		req    func() *http.Request
		status int
		code   int
	}{
		{"accept json only", func() *http.Request {
			r := newPost(url, sid, ping)
			r.Header.Set("Accept", "application/json")
			return r
		}, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest},
		{"accept missing", func() *http.Request {
			r := newPost(url, sid, ping)
			r.Header.Del("Accept")
			return r
		}, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest},
		{"content type", func() *http.Request {
			r := newPost(url, sid, ping)
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, http.StatusUnsupportedMediaType, jsonrpc.CodeInvalidRequest},
		{"not json", func() *http.Request { return newPost(url, sid, `{"jsonrpc":`) }, http.StatusBadRequest, jsonrpc.CodeParseError},
		{"empty body", func() *http.Request { return newPost(url, sid, ``) }, http.StatusBadRequest, jsonrpc.CodeParseError},
		{"batch", func() *http.Request { return newPost(url, sid, `[`+ping+`]`) }, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"not a message", func() *http.Request { return newPost(url, sid, `{"jsonrpc":"2.0"}`) }, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"missing session", func() *http.Request { return newPost(url, "", ping) }, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"unknown protocol version", func() *http.Request {
			r := newPost(url, sid, ping)
			r.Header.Set(HeaderProtocolVersion, "1999-01-01")
			return r
		}, http.StatusBadRequest, jsonrpc.CodeInvalidRequest},
		{"put", func() *http.Request {
			r := newPost(url, sid, ping)
			r.Method = http.MethodPut
			return r
		}, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest},
		{"get without sse accept", func() *http.Request {
			r := newGet(url, sid, "")
			r.Header.Set("Accept", "application/json")
			return r
		}, http.StatusNotAcceptable, jsonrpc.CodeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, tc.req())
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %s, want %d", resp.Status, tc.status)
			}
			if _, code, _ := decodeError(t, resp.Body); code != tc.code {
				t.Errorf("code = %d, want %d", code, tc.code)
			}
		})
	}

	// Known versions and wildcard Accept are fine.
	r := newPost(url, sid, ping)
	r.Header.Set(HeaderProtocolVersion, "2025-06-18")
	r.Header.Set("Accept", "*/*")
	if resp := do(t, r); resp.StatusCode != http.StatusOK {
		t.Errorf("valid request: %s", resp.Status)
	}
}

func TestNotificationsAndResponsesAre202(t *testing.T) {
	h := newTestHandler(nil)
	_, url := startServer(t, h, Options{})
	sid := initialize(t, url)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"s-1","result":{}}`,
	} {
		resp := post(t, url, sid, body)
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s: %s, want 202", body, resp.Status)
		}
		if b, _ := io.ReadAll(resp.Body); len(b) != 0 {
			t.Errorf("202 with body %q", b)
		}
		if got := string((<-h.other).Raw); got != body {
			t.Errorf("handler got %s, want %s", got, body)
		}
	}
}

func TestJSONResponse(t *testing.T) {
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		// A related notification cannot ride a JSON response: it goes to
		// the GET stream.
		n, _ := jsonrpc.NewNotification("notifications/message", map[string]string{"for": msg.Method})
		c.Send(ctx, n, msg.ID)
		resp, _ := jsonrpc.NewResult(msg.ID, map[string]string{"method": msg.Method})
		return resp
	})
	_, url := startServer(t, h, Options{JSONResponse: true})
	r := newPost(url, "", initBody)
	r.Header.Set("Accept", "application/json") // enough in JSON mode
	resp := do(t, r)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("initialize: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	sid := resp.Header.Get(HeaderSessionID)
	body, _ := io.ReadAll(resp.Body)
	if want := `{"jsonrpc":"2.0","id":1,"result":{"method":"initialize"}}`; string(body) != want {
		t.Errorf("body = %s, want %s", body, want)
	}
	get := do(t, newGet(url, sid, ""))
	ev, err := newSSEReader(get.Body).next()
	if err != nil || !strings.Contains(ev.data, `"for":"initialize"`) {
		t.Errorf("GET stream: %+v %v", ev, err)
	}
}

func TestDelete(t *testing.T) {
	ended := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, c Conn) error {
		defer close(ended)
		msg, _ := c.Recv(ctx)
		resp, _ := jsonrpc.NewResult(msg.ID, struct{}{})
		c.Send(ctx, resp, msg.ID)
		_, err := c.Recv(ctx)
		if err != ErrSessionClosed {
			t.Errorf("Recv after DELETE: %v", err)
		}
		return nil
	})
	m, url := startServer(t, h, Options{})
	sid := initialize(t, url)
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(HeaderSessionID, sid)
	if resp := do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	<-ended
	if n := m.SessionCount(); n != 0 {
		t.Errorf("SessionCount = %d", n)
	}
	if resp := post(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after DELETE: %s, want 404", resp.Status)
	}
	req, _ = http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(HeaderSessionID, sid)
	if resp := do(t, req); resp.StatusCode != http.StatusNotFound {
		t.Errorf("second DELETE: %s, want 404", resp.Status)
	}
}

func TestGETStream(t *testing.T) {
	h := newTestHandler(nil)
	_, url := startServer(t, h, Options{})
	sid := initialize(t, url)
	c := <-h.conns
	if c.SessionID() != sid {
		t.Errorf("Conn.SessionID = %q, want %q", c.SessionID(), sid)
	}

	// Sent before any GET: queued, then delivered in order.
	for i := range 2 {
		n, _ := jsonrpc.NewNotification("notifications/message", map[string]int{"n": i})
		if err := c.Send(t.Context(), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	get := do(t, newGet(url, sid, ""))
	if get.StatusCode != http.StatusOK || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %s %s", get.Status, get.Header.Get("Content-Type"))
	}
	sr := newSSEReader(get.Body)
	for i := range 2 {
		ev, err := sr.next()
		if err != nil || ev.data != `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":`+string(rune('0'+i))+`}}` {
			t.Fatalf("event %d: %+v %v", i, ev, err)
		}
		if ev.hasID {
			t.Errorf("event id %q without an event store", ev.id)
		}
	}
	// A second concurrent GET is refused.
	if resp := do(t, newGet(url, sid, "")); resp.StatusCode != http.StatusConflict {
		t.Errorf("second GET: %s, want 409", resp.Status)
	}
	// Live delivery, and a request to the client whose answer comes by POST.
	req, _ := jsonrpc.NewRequest(json.RawMessage(`"srv-1"`), "roots/list", nil)
	c.Send(t.Context(), req, nil)
	ev, err := sr.next()
	if err != nil || !strings.Contains(ev.data, `"roots/list"`) {
		t.Fatalf("live event: %+v %v", ev, err)
	}
	post(t, url, sid, `{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}`)
	if got := <-h.other; got.IDKey() != `"srv-1"` {
		t.Errorf("handler got %s", got.Raw)
	}
	// The GET stream ends with the session.
	req2, _ := http.NewRequest(http.MethodDelete, url, nil)
	req2.Header.Set(HeaderSessionID, sid)
	do(t, req2)
	if _, err := sr.next(); err != io.EOF {
		t.Errorf("GET stream after DELETE: %v", err)
	}
}

// TestRelatedMessagesRideTheRequestStream: progress and server requests go on
// the POST's SSE stream, ahead of the response that ends it.
func TestRelatedMessagesRideTheRequestStream(t *testing.T) {
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		if msg.Method == "tools/call" {
			n, _ := jsonrpc.NewNotification("notifications/progress", map[string]any{"progressToken": 1, "progress": 1})
			c.Send(ctx, n, msg.ID)
		}
		resp, _ := jsonrpc.NewResult(msg.ID, map[string]string{"method": msg.Method})
		return resp
	})
	_, url := startServer(t, h, Options{})
	sid := initialize(t, url)
	resp := post(t, url, sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}`)
	if got := resp.Header.Get(HeaderSessionID); got != sid {
		t.Errorf("session header = %q", got)
	}
	msgs := messages(t, readSSE(t, resp.Body))
	if len(msgs) != 2 || msgs[0].Method != "notifications/progress" || msgs[1].IDKey() != "5" {
		t.Fatalf("stream = %v", msgs)
	}
}

func TestResumption(t *testing.T) {
	release := make(chan struct{})
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		if msg.Method == "tools/call" {
			n, _ := jsonrpc.NewNotification("notifications/progress", map[string]any{"progressToken": 1, "progress": 1})
			c.Send(ctx, n, msg.ID)
			if err := c.CloseStream(msg.ID); err != nil {
				t.Errorf("CloseStream: %v", err)
			}
			n, _ = jsonrpc.NewNotification("notifications/progress", map[string]any{"progressToken": 1, "progress": 2})
			c.Send(ctx, n, msg.ID)
			<-release
		}
		resp, _ := jsonrpc.NewResult(msg.ID, map[string]string{"method": msg.Method})
		return resp
	})
	store := NewMemoryEventStore()
	_, url := startServer(t, h, Options{EventStore: store, Retry: 1500 * time.Millisecond})
	sid := initialize(t, url)

	resp := post(t, url, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}`)
	evs := readSSE(t, resp.Body) // the server ends it before the response
	if len(evs) != 2 {
		t.Fatalf("POST stream: %+v", evs)
	}
	prime := evs[0]
	if !prime.hasID || prime.data != "" || prime.retry != "1500" {
		t.Errorf("priming event = %+v", prime)
	}
	if !evs[1].hasID || !strings.Contains(evs[1].data, `"progress":1`) {
		t.Errorf("first event = %+v", evs[1])
	}

	// Resuming while the call is still running: the missed progress at once,
	// then the response when it comes.
	get := do(t, newGet(url, sid, evs[1].id))
	if get.StatusCode != http.StatusOK {
		t.Fatalf("resume: %s", get.Status)
	}
	// Only one reader per stream.
	if r := do(t, newGet(url, sid, evs[1].id)); r.StatusCode != http.StatusConflict {
		t.Errorf("second resume: %s, want 409", r.Status)
	}
	sr := newSSEReader(get.Body)
	ev, err := sr.next()
	if err != nil || !strings.Contains(ev.data, `"progress":2`) {
		t.Fatalf("replayed event = %+v %v", ev, err)
	}
	close(release)
	ev, err = sr.next()
	if err != nil || ev.data != `{"jsonrpc":"2.0","id":9,"result":{"method":"tools/call"}}` {
		t.Fatalf("response event = %+v %v", ev, err)
	}
	if _, err := sr.next(); err != io.EOF {
		t.Errorf("resumed stream did not end after the response: %v", err)
	}
}

// TestDeliveredStreamsAreBounded: the event store keeps only the last few
// fully delivered streams of a session.
func TestDeliveredStreamsAreBounded(t *testing.T) {
	store := NewMemoryEventStore()
	m, url := startServer(t, newTestHandler(nil), Options{EventStore: store})
	sid := initialize(t, url)
	for i := range 3 * keepDelivered {
		resp := post(t, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		readSSE(t, resp.Body)
	}
	if n := store.(*memoryStore).streamCount(); n > keepDelivered {
		t.Errorf("event store keeps %d streams, want at most %d", n, keepDelivered)
	}
	m.TerminateAll()
	if n := store.(*memoryStore).streamCount(); n != 0 {
		t.Errorf("event store keeps %d streams after the session ended", n)
	}
}

// TestResumeAfterClientDrop: a client whose POST stream broke resumes it from
// the last event it saw and gets the response that came meanwhile.
func TestResumeAfterClientDrop(t *testing.T) {
	proceed := make(chan struct{})
	answered := make(chan struct{})
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		resp, _ := jsonrpc.NewResult(msg.ID, map[string]string{"method": msg.Method})
		if msg.Method == "tools/call" {
			<-proceed
			c.Send(ctx, resp, msg.ID)
			close(answered)
			return nil
		}
		return resp
	})
	_, url := startServer(t, h, Options{EventStore: NewMemoryEventStore()})
	sid := initialize(t, url)

	ctx, cancel := context.WithCancel(t.Context())
	resp := do(t, newPost(url, sid, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}`).WithContext(ctx))
	prime, err := newSSEReader(resp.Body).next()
	if err != nil || !prime.hasID {
		t.Fatalf("priming event: %+v %v", prime, err)
	}
	cancel() // the connection drops; the call goes on
	close(proceed)
	<-answered

	var evs []sseEvent
	// The server may still be noticing the drop: 409 until it has.
	for {
		get := do(t, newGet(url, sid, prime.id))
		if get.StatusCode == http.StatusConflict {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		evs = readSSE(t, get.Body)
		break
	}
	if msgs := messages(t, evs); len(msgs) != 1 || msgs[0].IDKey() != `"a"` {
		t.Errorf("resumed stream = %+v", evs)
	}
}

func TestCloseStreamNeedsEventStore(t *testing.T) {
	errs := make(chan error, 1)
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		errs <- c.CloseStream(msg.ID)
		resp, _ := jsonrpc.NewResult(msg.ID, struct{}{})
		return resp
	})
	_, url := startServer(t, h, Options{})
	post(t, url, "", initBody)
	if err := <-errs; err == nil {
		t.Error("CloseStream without an event store succeeded")
	}
}

// TestCancelledRequestEndsStream: after notifications/cancelled the handler
// sends no response, and the request's stream ends anyway.
func TestCancelledRequestEndsStream(t *testing.T) {
	started := make(chan struct{})
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		resp, _ := jsonrpc.NewResult(msg.ID, struct{}{})
		if msg.Method == "tools/call" {
			close(started)
			<-ctx.Done()
			return resp // too late: must be dropped
		}
		return resp
	})
	_, url := startServer(t, h, Options{})
	sid := initialize(t, url)
	resp := post(t, url, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`)
	<-started
	if r := post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user"}}`); r.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel: %s", r.Status)
	}
	if msgs := messages(t, readSSE(t, resp.Body)); len(msgs) != 0 {
		t.Errorf("cancelled stream carried %v", msgs)
	}
}

func TestDuplicateRequestID(t *testing.T) {
	block := make(chan struct{})
	h := newTestHandler(func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message {
		if msg.Method == "tools/call" {
			<-block
		}
		resp, _ := jsonrpc.NewResult(msg.ID, struct{}{})
		return resp
	})
	_, url := startServer(t, h, Options{})
	sid := initialize(t, url)
	first := post(t, url, sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}`)
	if r := post(t, url, sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("duplicate id: %s, want 400", r.Status)
	}
	close(block)
	if msgs := messages(t, readSSE(t, first.Body)); len(msgs) != 1 {
		t.Errorf("first call: %v", msgs)
	}
}
