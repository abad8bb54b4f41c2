package demo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// stdioPeer plays the AI client of a ServeStdio session over pipes.
type stdioPeer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func serveStdio(t *testing.T, ctx context.Context, h server.Handler) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() {
		err := demo.ServeStdio(ctx, h, inR, outW)
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("writing to the server: %v", err)
	}
}

func (p *stdioPeer) request(id int, method string, params any) {
	p.t.Helper()
	m, err := jsonrpc.NewRequest(json.RawMessage(jsonInt(id)), method, params)
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(string(m.Bytes()))
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// next reads the next message the server wrote.
func (p *stdioPeer) next() *jsonrpc.Message {
	p.t.Helper()
	type result struct {
		line []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := p.out.ReadBytes('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			p.t.Fatalf("reading the server's output: %v", r.err)
		}
		m, err := jsonrpc.Parse(r.line)
		if err != nil {
			p.t.Fatalf("server wrote something that is not JSON-RPC: %q", r.line)
		}
		return m
	case <-time.After(10 * time.Second):
		p.t.Fatal("no message from the server within 10s")
		return nil
	}
}

func (p *stdioPeer) wait() error {
	p.t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(10 * time.Second):
		p.t.Fatal("ServeStdio did not return within 10s")
		return nil
	}
}

func resultText(t *testing.T, m *jsonrpc.Message) string {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("error response: %d %s", m.Error.Code, m.Error.Message)
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result: %s", m.Raw)
	}
	if r.IsError {
		t.Fatalf("tool error: %s", r.Content[0].Text)
	}
	return r.Content[0].Text
}

func TestServeStdioTools(t *testing.T) {
	p := serveStdio(t, t.Context(), demo.New(nil))
	p.request(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	m := p.next()
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || init.ServerInfo.Name != demo.Name || init.ProtocolVersion != "2025-11-25" {
		t.Fatalf("initialize = %s", m.Raw)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.request(2, "tools/list", nil)
	if m := p.next(); !strings.Contains(string(m.Result), `"echo"`) {
		t.Errorf("tools/list = %s", m.Raw)
	}
	p.request(3, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "héllo\nworld"}})
	if got := resultText(t, p.next()); got != "héllo\nworld" {
		t.Errorf("echo = %q", got)
	}
	// A result of several megabytes is one line, however long.
	p.request(4, "tools/call", map[string]any{"name": "big", "arguments": map[string]any{"bytes": 3 << 20}})
	if got := resultText(t, p.next()); len(got) != 3<<20 {
		t.Errorf("big returned %d bytes", len(got))
	}
	p.in.Close()
	if err := p.wait(); err != nil {
		t.Errorf("ServeStdio = %v, want nil at EOF", err)
	}
}

func TestServeStdioBadLines(t *testing.T) {
	p := serveStdio(t, t.Context(), demo.New(nil))
	p.send(`{"jsonrpc":`)
	if m := p.next(); m.Error == nil || m.Error.Code != jsonrpc.CodeParseError || string(m.ID) != "null" {
		t.Errorf("broken JSON: %s", m.Raw)
	}
	p.send(`[1,2]`)
	if m := p.next(); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("array: %s", m.Raw)
	}
	p.request(7, "no/such/method", nil)
	if m := p.next(); m.Error == nil || m.Error.Code != jsonrpc.CodeMethodNotFound || string(m.ID) != "7" {
		t.Errorf("unknown method: %s", m.Raw)
	}
	p.request(8, "ping", nil)
	if m := p.next(); m.Error != nil || string(m.ID) != "8" {
		t.Errorf("ping after bad lines: %s", m.Raw)
	}
}

// TestServeStdioSampling: the server's request to the client (ask) goes out
// on stdout and the client's answer comes back on stdin.
func TestServeStdioSampling(t *testing.T) {
	p := serveStdio(t, t.Context(), demo.New(nil))
	p.request(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"sampling": map[string]any{}}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	p.next()
	p.request(2, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{"question": "why?"}})
	req := p.next()
	if req.Kind() != jsonrpc.KindRequest || req.Method != "sampling/createMessage" {
		t.Fatalf("want a sampling request, got %s", req.Raw)
	}
	reply, _ := jsonrpc.NewResult(req.ID, map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "because"}})
	p.send(string(reply.Bytes()))
	if got := resultText(t, p.next()); got != "because" {
		t.Errorf("ask = %q", got)
	}
}

// TestServeStdioEOFFinishesRequests: stdin closing does not lose the answer
// to a request still being served.
func TestServeStdioEOFFinishesRequests(t *testing.T) {
	p := serveStdio(t, t.Context(), demo.New(nil))
	p.request(1, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 2, "delayMs": 50}})
	p.in.Close()
	if got := resultText(t, p.next()); got != "done after 2 steps" {
		t.Errorf("slow = %q", got)
	}
	if err := p.wait(); err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
}

func TestServeStdioContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := serveStdio(t, ctx, demo.New(nil))
	p.request(1, "ping", nil)
	p.next()
	cancel()
	if err := p.wait(); err != nil {
		t.Errorf("ServeStdio after cancel = %v, want nil", err)
	}
}

func TestServeStdioConn(t *testing.T) {
	handlerErr := errors.New("handler gave up")
	var sid string
	var closeErr error
	h := server.HandlerFunc(func(ctx context.Context, c server.Conn) error {
		sid = c.SessionID()
		closeErr = c.CloseStream(json.RawMessage("1"))
		msg, err := c.Recv(ctx)
		if err != nil {
			return err
		}
		resp, _ := jsonrpc.NewResult(msg.ID, map[string]any{"ok": true})
		if err := c.Send(ctx, resp, msg.ID); err != nil {
			return err
		}
		return handlerErr
	})
	p := serveStdio(t, t.Context(), h)
	p.request(5, "anything", nil)
	if m := p.next(); string(m.Result) != `{"ok":true}` {
		t.Errorf("response = %s", m.Raw)
	}
	if err := p.wait(); !errors.Is(err, handlerErr) {
		t.Errorf("ServeStdio = %v, want the handler's error", err)
	}
	if sid != "" {
		t.Errorf("SessionID = %q, want empty", sid)
	}
	if closeErr == nil {
		t.Error("CloseStream succeeded on stdio")
	}
	if err := demo.ServeStdio(t.Context(), nil, strings.NewReader(""), io.Discard); err == nil {
		t.Error("nil handler accepted")
	}
}
