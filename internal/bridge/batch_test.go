package bridge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// TestBatch2025_03_26: a client that negotiated 2025-03-26 may send a batch
// (rule L13); each element travels upstream on its own POST and the answers
// come back as one array, with an error entry for an invalid element.
func TestBatch2025_03_26(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	d := startDesktop(t, url, nil)
	res := d.call("initialize", map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	var ir struct{ ProtocolVersion string }
	json.Unmarshal(res, &ir)
	if ir.ProtocolVersion != "2025-03-26" {
		t.Skipf("server negotiated %q", ir.ProtocolVersion)
	}
	d.notify("notifications/initialized", nil)
	d.sendRaw([]byte(`[{"jsonrpc":"2.0","id":"b1","method":"ping"},` +
		`{"jsonrpc":"2.0","id":"b2","method":"tools/call","params":{"name":"echo","arguments":{"message":"in a batch"}}},` +
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
		`{"nonsense":true}]`))
	b1 := d.await(json.RawMessage(`"b1"`))
	b2 := d.await(json.RawMessage(`"b2"`))
	if b1.Error != nil || b2.Error != nil {
		t.Fatalf("batch answers: %s / %s", b1.Raw, b2.Raw)
	}
	if got := toolText(t, b2.Result); got != "in a batch" {
		t.Errorf("echo in a batch = %q", got)
	}
	if m := d.await(json.RawMessage("null")); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("invalid element: %s", m.Raw)
	}
	d.mu.Lock()
	batches := append([]int(nil), d.batches...)
	d.mu.Unlock()
	if len(batches) != 1 || batches[0] != 3 {
		t.Errorf("batch responses written: %v, want one array of 3", batches)
	}
	checkExactlyOnce(t, d)
}

// TestBatchRefusedAfter2025_03_26: later revisions removed batches; a batch
// is one invalid-request error.
func TestBatchRefusedAfter2025_03_26(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	d := startDesktop(t, url, nil)
	d.initialize(nil) // 2025-11-25
	d.sendRaw([]byte(`[{"jsonrpc":"2.0","id":"x","method":"ping"}]`))
	select {
	case m := <-d.msgs:
		if m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest || string(m.ID) != "null" {
			t.Errorf("batch under 2025-11-25: %s", m.Raw)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to a batch")
	}
	if n := d.responseCounts()[`"x"`]; n != 0 {
		t.Errorf("an element of a refused batch was answered")
	}
}
