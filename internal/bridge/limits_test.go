package bridge

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
)

// TestOversizedLine: a line over the message limit gets one clear error, is
// never held in memory whole, and the next line is served normally. (The
// default limit is 64 MiB; a 100 MB line meets the same path.)
func TestOversizedLine(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	const limit = 1 << 20
	d := startDesktop(t, url, func(_ *ClientOptions, r *RelayOptions) { r.MaxMessage = limit })
	d.initialize(nil)
	line := append([]byte(`{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo","arguments":{"message":"`), bytes.Repeat([]byte("x"), 8*limit)...)
	line = append(line, "\"}}}\n"...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := d.in.Write(line); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-d.msgs:
		if m.Error == nil || !strings.Contains(m.Error.Message, "too large") {
			t.Fatalf("oversized line: %s", m.Raw)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to an oversized line")
	}
	runtime.ReadMemStats(&after)
	// The reader discards what is past the limit: it allocates about the
	// limit for the line (growing a buffer up to it), never the 8 MiB line,
	// which read whole would cost twice its size.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 6*limit {
		t.Errorf("reading an 8 MiB line over a 1 MiB limit allocated %d bytes", grew)
	}
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "next"}})); got != "next" {
		t.Errorf("echo after the oversized line = %q", got)
	}
}
