package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

var nopHandler = HandlerFunc(func(ctx context.Context, c Conn) error { return nil })

func TestRunCanOnlyBeCalledOnce(t *testing.T) {
	m, err := New(nopHandler, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	err = m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "can only be called once") {
		t.Fatalf("second Run = %v, want a can only be called once error", err)
	}
}

func TestRunPreventsConcurrentCalls(t *testing.T) {
	m, err := New(nopHandler, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- m.Run(ctx) }()
	}
	// One of them fails at once; the other runs until cancelled.
	first := <-errs
	cancel()
	second := <-errs
	if first == nil || !strings.Contains(first.Error(), "can only be called once") {
		t.Errorf("first result = %v, want a can only be called once error", first)
	}
	if second != nil {
		t.Errorf("running Run returned %v", second)
	}
}

func TestRequestWithoutRun(t *testing.T) {
	var logs logBuffer
	m, err := New(nopHandler, Options{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, newPost("http://x/mcp", "", initBody))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", rec.Code)
	}
	if !strings.Contains(logs.String(), "not running") {
		t.Errorf("no error logged; logs:\n%s", logs.String())
	}
}

// TestSessionCleanup: a session whose handler ends, gracefully or by panic,
// is forgotten, and the request it left unanswered gets an error rather than
// hanging.
func TestSessionCleanup(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    HandlerFunc
		log  string
	}{
		{"graceful", func(ctx context.Context, c Conn) error { return nil }, "handler returned"},
		{"error", func(ctx context.Context, c Conn) error { return errors.New("boom") }, "handler failed"},
		{"panic", func(ctx context.Context, c Conn) error { panic("simulated crash") }, "simulated crash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			m, url := startServer(t, tc.h, Options{Logger: logs.logger()})
			resp := post(t, url, "", initBody)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
			sid := resp.Header.Get(HeaderSessionID)
			if sid == "" {
				t.Fatal("no session id in the response headers")
			}
			msgs := messages(t, readSSE(t, resp.Body))
			if len(msgs) != 1 || msgs[0].Error == nil || msgs[0].Error.Code != jsonrpc.CodeInternalError {
				t.Fatalf("want one error response, got %+v", msgs)
			}
			// The session is gone by the time its last stream ended.
			if n := m.SessionCount(); n != 0 {
				t.Errorf("SessionCount = %d, want 0", n)
			}
			if resp := post(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
				t.Errorf("request to the ended session: %s, want 404", resp.Status)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("logs lack %q:\n%s", tc.log, logs.String())
			}
		})
	}
}

func TestStatelessLeavesNothing(t *testing.T) {
	for _, jsonMode := range []bool{false, true} {
		h := newTestHandler(nil)
		m, url := startServer(t, h, Options{Stateless: true, JSONResponse: jsonMode})
		for i := range 3 {
			resp := post(t, url, "", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
			if sid := resp.Header.Get(HeaderSessionID); sid != "" {
				t.Errorf("stateless response carries session id %q", sid)
			}
			var got *jsonrpc.Message
			if jsonMode {
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if got, err = jsonrpc.Parse(body); err != nil {
					t.Fatal(err)
				}
			} else {
				msgs := messages(t, readSSE(t, resp.Body))
				if len(msgs) != 1 {
					t.Fatalf("want one message, got %d", len(msgs))
				}
				got = msgs[0]
			}
			if string(got.Result) != `{"method":"tools/list"}` {
				t.Errorf("result = %s", got.Result)
			}
			// Each POST got a fresh handler, and nothing is left of it.
			if n := len(h.conns); n != i+1 {
				t.Errorf("handlers started = %d, want %d", n, i+1)
			}
			m.mu.Lock()
			n := len(m.sessions)
			m.mu.Unlock()
			if n != 0 || m.live.Load() != 0 {
				t.Errorf("after a stateless request: %d sessions, %d live handlers", n, m.live.Load())
			}
		}
		if resp := post(t, url, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
			t.Errorf("notification: %s, want 202", resp.Status)
		}
		if resp := do(t, newGet(url, "", "")); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("stateless GET: %s, want 405", resp.Status)
		}
	}
}

func TestUnknownSessionIs404(t *testing.T) {
	var logs logBuffer
	_, url := startServer(t, nopHandler, Options{Logger: logs.logger()})
	resp := post(t, url, "non-existent-session-id", `{}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status = %s, want 404", resp.Status)
	}
	id, code, msg := decodeError(t, resp.Body)
	if string(id) != "null" || code != jsonrpc.CodeInvalidRequest || msg != "Session not found" {
		t.Errorf("error = id %s code %d %q", id, code, msg)
	}
	if want := "rejected request with unknown or expired session id: non-existent-session-id"; !strings.Contains(logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, logs.String())
	}
}

// TestIdleSessionIsReaped runs in a synctest bubble against ServeHTTP
// directly, so the idle timer fires on fake time, with no sleeping.
func TestIdleSessionIsReaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := New(newTestHandler(nil), Options{IdleTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go m.Run(ctx)
		<-m.Ready()

		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, newPost("http://x/mcp", "", initBody))
		sid := rec.Header().Get(HeaderSessionID)
		if rec.Code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d, session %q", rec.Code, sid)
		}

		// Activity keeps it alive.
		time.Sleep(40 * time.Millisecond)
		rec = httptest.NewRecorder()
		m.ServeHTTP(rec, newPost("http://x/mcp", sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		if rec.Code != http.StatusOK {
			t.Fatalf("ping: %d", rec.Code)
		}
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		if n := m.SessionCount(); n != 1 {
			t.Fatalf("SessionCount = %d before the idle timeout, want 1", n)
		}

		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if n := m.SessionCount(); n != 0 {
			t.Errorf("SessionCount = %d after the idle timeout, want 0", n)
		}
		rec = httptest.NewRecorder()
		m.ServeHTTP(rec, newPost("http://x/mcp", sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`))
		if rec.Code != http.StatusNotFound {
			t.Errorf("request after reaping: %d, want 404", rec.Code)
		}
	})
}

func TestIdleTimeoutOptions(t *testing.T) {
	if _, err := New(nopHandler, Options{IdleTimeout: -1}); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("negative idle timeout: %v, want a positive duration error", err)
	}
	if _, err := New(nopHandler, Options{IdleTimeout: 30 * time.Second, Stateless: true}); err == nil || !strings.Contains(err.Error(), "not supported in stateless") {
		t.Errorf("idle timeout in stateless mode: %v, want a not supported in stateless error", err)
	}
	if _, err := New(nopHandler, Options{}); err != nil {
		t.Errorf("zero idle timeout (never reap): %v", err)
	}
}

func TestTerminateAll(t *testing.T) {
	h := newTestHandler(nil)
	m, url := startServer(t, h, Options{})
	a, b := initialize(t, url), initialize(t, url)
	if n := m.SessionCount(); n != 2 {
		t.Fatalf("SessionCount = %d, want 2", n)
	}
	m.TerminateAll()
	if n := m.SessionCount(); n != 0 {
		t.Errorf("SessionCount after TerminateAll = %d", n)
	}
	for _, sid := range []string{a, b} {
		if resp := post(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
			t.Errorf("after TerminateAll: %s, want 404", resp.Status)
		}
	}
	// A fresh initialize works as after a server restart.
	initialize(t, url)
}

func TestRunEndsSessions(t *testing.T) {
	var ended sync.WaitGroup
	ended.Add(1)
	h := HandlerFunc(func(ctx context.Context, c Conn) error {
		defer ended.Done()
		for {
			msg, err := c.Recv(ctx)
			if err != nil {
				return err
			}
			resp, _ := jsonrpc.NewResult(msg.ID, struct{}{})
			c.Send(ctx, resp, msg.ID)
		}
	})
	m, err := New(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	<-m.Ready()
	srv := httptest.NewServer(m)
	defer srv.Close()
	initialize(t, srv.URL)
	cancel()
	<-done
	ended.Wait() // Run returned only after the handler did
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, newPost("http://x/mcp", "", initBody))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("after Run: %d, want 503", rec.Code)
	}
}
