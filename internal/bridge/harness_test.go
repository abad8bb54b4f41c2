package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// desktop plays the AI client: it drives a Relay over in-memory pipes, as a
// desktop app drives mcpbridge over stdio.
type desktop struct {
	t      testing.TB
	in     *io.PipeWriter // the relay's stdin
	done   chan error     // Run's result
	msgs   chan *jsonrpc.Message
	raw    chan []byte // every line the relay wrote, for "protocol only" checks
	relay  *Relay
	nextID int

	mu        sync.Mutex
	responses map[string]int // id key -> number of responses seen
	// onRequest answers server-to-client requests (sampling, roots...). Nil
	// answers -32601.
	onRequest func(m *jsonrpc.Message) any
	notes     []*jsonrpc.Message
	stash     map[string][]*jsonrpc.Message // responses read while awaiting another id
	timeout   time.Duration                 // how long await waits; default 30 s
	batches   []int                         // sizes of the batch responses written
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// startDesktop starts a relay to url and returns the desktop driving it.
func startDesktop(t testing.TB, url string, tweak func(*ClientOptions, *RelayOptions)) *desktop {
	t.Helper()
	copts := ClientOptions{URL: url, Logger: testLogger(t), Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}}
	ropts := RelayOptions{Logger: testLogger(t), Retry: Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 3}}
	if tweak != nil {
		tweak(&copts, &ropts)
	}
	c, err := NewClient(copts)
	if err != nil {
		t.Fatal(err)
	}
	ropts.Client = c
	r, err := NewRelay(ropts)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	d := &desktop{t: t, in: inW, done: make(chan error, 1), msgs: make(chan *jsonrpc.Message, 1024), raw: make(chan []byte, 4096), relay: r, responses: map[string]int{}}
	go func() {
		d.done <- r.Run(context.Background(), inR, outW)
		outW.Close()
	}()
	go d.readLoop(outR)
	t.Cleanup(func() { d.close() })
	return d
}

func (d *desktop) readLoop(out io.Reader) {
	br := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			close(d.msgs)
			return
		}
		select {
		case d.raw <- line:
		default:
		}
		elems := [][]byte{line}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] == '[' {
			// A batch response (2025-03-26 clients only): one line, an
			// array of responses.
			var raws []json.RawMessage
			if err := json.Unmarshal(trimmed, &raws); err != nil {
				d.t.Errorf("relay wrote a malformed batch: %q", truncate(line))
				continue
			}
			d.mu.Lock()
			d.batches = append(d.batches, len(raws))
			d.mu.Unlock()
			elems = elems[:0]
			for _, r := range raws {
				elems = append(elems, r)
			}
		}
		for _, e := range elems {
			d.handleOut(e)
		}
	}
}

// handleOut takes one message the relay wrote.
func (d *desktop) handleOut(line []byte) {
	m, err := jsonrpc.Parse(line)
	if err != nil {
		d.t.Errorf("relay wrote a line that is not a JSON-RPC message: %q", truncate(line))
		return
	}
	if m.Kind() == jsonrpc.KindRequest {
		go d.answer(m)
		return
	}
	if m.Kind() == jsonrpc.KindResponse {
		d.mu.Lock()
		d.responses[m.IDKey()]++
		d.mu.Unlock()
	} else {
		d.mu.Lock()
		d.notes = append(d.notes, m)
		d.mu.Unlock()
	}
	d.msgs <- m
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

func (d *desktop) answer(m *jsonrpc.Message) {
	var reply *jsonrpc.Message
	if d.onRequest != nil {
		if res := d.onRequest(m); res != nil {
			reply, _ = jsonrpc.NewResult(m.ID, res)
		}
	}
	if reply == nil {
		if m.Method == "ping" {
			reply, _ = jsonrpc.NewResult(m.ID, struct{}{})
		} else {
			reply = jsonrpc.NewError(m.ID, jsonrpc.CodeMethodNotFound, "no handler in test", nil)
		}
	}
	d.send(reply)
}

func (d *desktop) send(m *jsonrpc.Message) {
	d.sendRaw(m.Bytes())
}

func (d *desktop) sendRaw(line []byte) {
	d.t.Helper()
	if _, err := d.in.Write(append(append([]byte{}, line...), '\n')); err != nil {
		d.t.Fatalf("writing to relay stdin: %v", err)
	}
}

// request sends a request and returns its id.
func (d *desktop) request(method string, params any) json.RawMessage {
	d.t.Helper()
	d.mu.Lock()
	d.nextID++
	id := json.RawMessage(fmt.Sprint(d.nextID))
	d.mu.Unlock()
	m, err := jsonrpc.NewRequest(id, method, params)
	if err != nil {
		d.t.Fatal(err)
	}
	d.send(m)
	return id
}

func (d *desktop) notify(method string, params any) {
	d.t.Helper()
	m, err := jsonrpc.NewNotification(method, params)
	if err != nil {
		d.t.Fatal(err)
	}
	d.send(m)
}

// await returns the response to id, collecting notifications on the way.
func (d *desktop) await(id json.RawMessage) *jsonrpc.Message {
	d.t.Helper()
	key := jsonrpc.IDKey(id)
	d.mu.Lock()
	if q := d.stash[key]; len(q) > 0 {
		d.stash[key] = q[1:]
		d.mu.Unlock()
		return q[0]
	}
	d.mu.Unlock()
	wait := d.timeout
	if wait == 0 {
		wait = 30 * time.Second
	}
	timeout := time.After(wait)
	for {
		select {
		case m, ok := <-d.msgs:
			if !ok {
				d.t.Fatalf("relay output closed while waiting for response %s", id)
			}
			if m.Kind() == jsonrpc.KindResponse {
				if m.IDKey() == key {
					return m
				}
				d.mu.Lock()
				if d.stash == nil {
					d.stash = map[string][]*jsonrpc.Message{}
				}
				d.stash[m.IDKey()] = append(d.stash[m.IDKey()], m)
				d.mu.Unlock()
			}
		case <-timeout:
			d.t.Fatalf("no response to request %s within %s", id, wait)
		}
	}
}

// call sends a request and waits for a successful result.
func (d *desktop) call(method string, params any) json.RawMessage {
	d.t.Helper()
	m := d.await(d.request(method, params))
	if m.Error != nil {
		d.t.Fatalf("%s failed: %d %s", method, m.Error.Code, m.Error.Message)
	}
	return m.Result
}

// initialize runs the MCP handshake with the given client capabilities.
func (d *desktop) initialize(caps map[string]any) json.RawMessage {
	d.t.Helper()
	if caps == nil {
		caps = map[string]any{}
	}
	res := d.call("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "test-desktop", "version": "1.0"},
	})
	d.notify("notifications/initialized", nil)
	return res
}

// close ends the relay as a desktop app does: stdin EOF.
func (d *desktop) close() error {
	d.in.Close()
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(10 * time.Second):
		d.t.Errorf("relay did not exit within 10s of stdin EOF")
		return nil
	}
}

// responseCounts returns how many responses each id got.
func (d *desktop) responseCounts() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, v := range d.responses {
		out[k] = v
	}
	return out
}

func (d *desktop) notifications(method string) []*jsonrpc.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*jsonrpc.Message
	for _, n := range d.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// toolText returns the text of the first content item of a tools/call result.
func toolText(t testing.TB, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("decoding tool result: %v", err)
	}
	if len(r.Content) == 0 {
		t.Fatalf("tool result has no content: %s", result)
	}
	return r.Content[0].Text
}
