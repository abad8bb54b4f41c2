package sse

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLargeEventAllocations: an event far larger than the read buffer, fed a
// byte range at a time, comes out whole, and reading it allocates about twice
// its size (the pieces and the joined line), not the many times that growing
// a single slice costs.
func TestLargeEventAllocations(t *testing.T) {
	const size = 8 << 20
	payload := strings.Repeat("x", size)
	stream := "id: 1\ndata: " + payload + "\n\n" +
		"data: a\ndata:\ndata\ndata: " + payload[:100<<10] + "\n\n"
	r := NewReader(iotest.HalfReader(strings.NewReader(stream)), 0)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ev, err := r.Next()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Data) != size || !bytes.Equal(ev.Data, []byte(payload)) || ev.ID != "1" {
		t.Fatalf("event of %d bytes, id %q", len(ev.Data), ev.ID)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*size {
		t.Errorf("reading a %d-byte event allocated %d bytes", size, alloc)
	}

	// Several data fields, empty ones included, are joined with newlines.
	ev, err = r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n\n\n" + payload[:100<<10]; string(ev.Data) != want {
		t.Fatalf("joined data: %d bytes, want %d", len(ev.Data), len(want))
	}
}

// TestEventLimitCountsJoiningNewlines: the limit applies to the data as
// delivered, newlines between fields included.
func TestEventLimitCountsJoiningNewlines(t *testing.T) {
	r := NewReader(strings.NewReader("data: ab\ndata: cd\n\ndata: ab\ndata: c\n\n"), 4)
	if _, err := r.Next(); err != ErrEventTooLarge {
		t.Fatalf("5-byte event with limit 4: err = %v", err)
	}
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "ab\nc" {
		t.Fatalf("4-byte event: %q, %v", ev.Data, err)
	}
}
