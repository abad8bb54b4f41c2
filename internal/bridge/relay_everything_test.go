package bridge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/faultproxy"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
	"github.com/mcpbridge/mcpbridge/internal/testpeers"
)

// TestEverythingPeer relays to @modelcontextprotocol/server-everything, the
// reference TypeScript server (stateful, with an event store).
func TestEverythingPeer(t *testing.T) {
	url := testpeers.Everything(t)
	proxy := faultproxy.New(t, url)
	d := startDesktop(t, proxy.URL, nil)
	d.onRequest = func(m *jsonrpc.Message) any {
		if m.Method == "sampling/createMessage" {
			return map[string]any{"role": "assistant", "model": "test-model", "content": map[string]any{"type": "text", "text": "sampled by the desktop"}}
		}
		return nil
	}
	init := d.initialize(map[string]any{"sampling": map[string]any{}})
	if !strings.Contains(string(init), "protocolVersion") {
		t.Fatalf("initialize result: %s", init)
	}
	list := d.call("tools/list", nil)
	for _, name := range []string{"echo", "get-sum", "trigger-long-running-operation", "trigger-sampling-request"} {
		if !strings.Contains(string(list), `"`+name+`"`) {
			t.Errorf("tools/list lacks %s", name)
		}
	}
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hello"}})); !strings.Contains(got, "hello") {
		t.Errorf("echo = %q", got)
	}
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "get-sum", "arguments": map[string]any{"a": 2, "b": 40}})); !strings.Contains(got, "42") {
		t.Errorf("get-sum = %q", got)
	}

	t.Run("progress in order", func(t *testing.T) {
		res := d.call("tools/call", map[string]any{"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 0.5, "steps": 5}, "_meta": map[string]any{"progressToken": "lro"}})
		if got := toolText(t, res); !strings.Contains(got, "completed") {
			t.Errorf("result %q", got)
		}
		assertProgress(t, d.notifications("notifications/progress"), "lro", 5)
	})

	t.Run("sampling answered by the desktop", func(t *testing.T) {
		res := d.call("tools/call", map[string]any{"name": "trigger-sampling-request", "arguments": map[string]any{"prompt": "hi", "maxTokens": 5}})
		if !strings.Contains(string(res), "sampled by the desktop") {
			t.Errorf("result does not carry the sampled text: %s", res)
		}
	})

	t.Run("resumption after a cut stream", func(t *testing.T) {
		// Cut the tool call's POST stream after its priming event and two
		// progress events: the bridge must resume with GET + Last-Event-ID
		// and still deliver every progress event and the result, once.
		//
		// The resume is held until the operation has finished: the event
		// store of server-everything 2026.x returns an event id where the SDK
		// expects a stream id, so events stored after a resume are routed to
		// no stream. Events stored before it are replayed correctly.
		proxy.SetRule(func(r *faultproxy.Request, n int) faultproxy.Fault {
			if r.Method == "POST" && strings.Contains(string(r.Body), "trigger-long-running-operation") {
				return faultproxy.Fault{CutAfterEvents: 3}
			}
			if r.Method == "GET" && r.LastEventID != "" {
				return faultproxy.Fault{Delay: 1500 * time.Millisecond}
			}
			return faultproxy.Fault{}
		})
		defer proxy.SetRule(nil)
		res := d.call("tools/call", map[string]any{"name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 0.5, "steps": 5}, "_meta": map[string]any{"progressToken": "cut"}})
		if got := toolText(t, res); !strings.Contains(got, "completed") {
			t.Errorf("result %q", got)
		}
		assertProgress(t, d.notifications("notifications/progress"), "cut", 5)
		resumed := false
		for _, r := range proxy.Requests() {
			if r.Method == "GET" && r.LastEventID != "" {
				resumed = true
			}
		}
		if !resumed {
			t.Error("no GET with Last-Event-ID was sent")
		}
	})

	d.close()
	for id, n := range d.responseCounts() {
		if n != 1 {
			t.Errorf("request %s got %d responses", id, n)
		}
	}
	deleted := false
	for _, r := range proxy.Requests() {
		if r.Method == "DELETE" {
			deleted = true
		}
	}
	if !deleted {
		t.Error("no DELETE on stdin EOF")
	}
}

// assertProgress checks that the progress notifications for token are
// exactly 1..n, in order.
func assertProgress(t *testing.T, notes []*jsonrpc.Message, token string, n int) {
	t.Helper()
	var got []float64
	for _, m := range notes {
		var p struct {
			ProgressToken any     `json:"progressToken"`
			Progress      float64 `json:"progress"`
		}
		json.Unmarshal(m.Params, &p)
		if p.ProgressToken == token {
			got = append(got, p.Progress)
		}
	}
	if len(got) != n {
		t.Fatalf("progress for %s: got %v, want 1..%d", token, got, n)
	}
	for i, v := range got {
		if v != float64(i+1) {
			t.Fatalf("progress for %s out of order: %v", token, got)
		}
	}
}
