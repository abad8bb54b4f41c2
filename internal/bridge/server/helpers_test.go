package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// logBuffer captures slog output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// requestFunc serves one request of a testHandler session. Returning a nil
// message sends no response.
type requestFunc func(ctx context.Context, c Conn, msg *jsonrpc.Message) *jsonrpc.Message

// testHandler answers every request (each in its own goroutine) with
// {"method": <method>} unless onRequest says otherwise, and hands out its
// Conns and the messages that are not requests.
type testHandler struct {
	onRequest requestFunc
	conns     chan Conn
	other     chan *jsonrpc.Message
}

func newTestHandler(on requestFunc) *testHandler {
	return &testHandler{onRequest: on, conns: make(chan Conn, 16), other: make(chan *jsonrpc.Message, 64)}
}

func (h *testHandler) ServeSession(ctx context.Context, c Conn) error {
	h.conns <- c
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		msg, err := c.Recv(ctx)
		if err != nil {
			return err
		}
		if msg.Kind() != jsonrpc.KindRequest {
			h.other <- msg
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp *jsonrpc.Message
			if h.onRequest != nil {
				resp = h.onRequest(ctx, c, msg)
			} else {
				resp, _ = jsonrpc.NewResult(msg.ID, map[string]string{"method": msg.Method})
			}
			if resp != nil {
				c.Send(context.Background(), resp, msg.ID)
			}
		}()
	}
}

// startServer runs m behind an httptest server until the test ends.
func startServer(t *testing.T, h Handler, opts Options) (*Manager, string) {
	t.Helper()
	m, err := New(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	<-m.Ready()
	srv := httptest.NewServer(m)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		srv.Close()
	})
	return m, srv.URL + "/mcp"
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func newPost(url, session, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(HeaderSessionID, session)
	}
	return req
}

func do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func post(t *testing.T, url, session, body string) *http.Response {
	t.Helper()
	return do(t, newPost(url, session, body))
}

func newGet(url, session, lastEventID string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(HeaderSessionID, session)
	if lastEventID != "" {
		req.Header.Set(HeaderLastEventID, lastEventID)
	}
	return req
}

// initialize starts a session and returns its id.
func initialize(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, url, "", initBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s", resp.Status)
	}
	readSSE(t, resp.Body)
	id := resp.Header.Get(HeaderSessionID)
	if id == "" {
		t.Fatal("initialize: no session id")
	}
	return id
}

type sseEvent struct {
	id, data, retry string
	hasID           bool
}

// sseReader reads events one at a time from a response body.
type sseReader struct{ r *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{bufio.NewReader(r)} }

// next returns the next event, or io.EOF when the stream ended.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, io.EOF
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !seen {
				continue
			}
			ev.data = strings.Join(data, "\n")
			return ev, nil
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id, ev.hasID = value, true
		case "data":
			data = append(data, value)
		case "retry":
			ev.retry = value
		}
	}
}

// readSSE reads a whole stream.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	sr := newSSEReader(r)
	var evs []sseEvent
	for {
		ev, err := sr.next()
		if err != nil {
			return evs
		}
		evs = append(evs, ev)
	}
}

// messages decodes the non-empty data of events.
func messages(t *testing.T, evs []sseEvent) []*jsonrpc.Message {
	t.Helper()
	var out []*jsonrpc.Message
	for _, ev := range evs {
		if ev.data == "" {
			continue
		}
		m, err := jsonrpc.Parse([]byte(ev.data))
		if err != nil {
			t.Fatalf("event data %q: %v", ev.data, err)
		}
		out = append(out, m)
	}
	return out
}

func decodeError(t *testing.T, body io.Reader) (id json.RawMessage, code int, msg string) {
	t.Helper()
	var v struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}
	if err := json.NewDecoder(body).Decode(&v); err != nil {
		t.Fatalf("decoding error body: %v", err)
	}
	if v.JSONRPC != "2.0" {
		t.Errorf("jsonrpc = %q", v.JSONRPC)
	}
	return v.ID, v.Error.Code, v.Error.Message
}
