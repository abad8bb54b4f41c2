package bridge

import (
	"bytes"
	"context"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// Load tests: many requests at once through one relay, and many in a row
// without leaks. They check behaviour, never timing.

// barrierHandler answers initialize at once but holds every other request
// until n of them have arrived, then answers them all, each with its own id as
// the tool's text. A relay that serialised requests, or capped how many are in
// flight below n, would never get past the barrier.
type barrierHandler struct {
	n       int64
	arrived atomic.Int64
	release chan struct{}
}

func newBarrier(n int) *barrierHandler {
	return &barrierHandler{n: int64(n), release: make(chan struct{})}
}

func (h *barrierHandler) ServeSession(ctx context.Context, c server.Conn) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		msg, err := c.Recv(ctx)
		if err != nil {
			return nil
		}
		if msg.Kind() != jsonrpc.KindRequest {
			continue
		}
		if msg.Method == "initialize" {
			resp, _ := jsonrpc.NewResult(msg.ID, map[string]any{
				"protocolVersion": "2025-11-25",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "barrier", "version": "1"},
			})
			c.Send(ctx, resp, msg.ID)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h.arrived.Add(1) == h.n {
				close(h.release)
			}
			select {
			case <-h.release:
			case <-ctx.Done():
				return
			}
			resp, _ := jsonrpc.NewResult(msg.ID, map[string]any{
				"content": []map[string]any{{"type": "text", "text": string(msg.ID)}},
			})
			c.Send(ctx, resp, msg.ID)
		}()
	}
}

// serveHandler serves h with our server side on a loopback test server.
func serveHandler(t *testing.T, h server.Handler) string {
	t.Helper()
	mgr, err := server.New(h, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		mgr.Run(ctx)
	}()
	<-mgr.Ready()
	srv := httptest.NewServer(mgr)
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
	})
	return srv.URL
}

// TestLoadThousandInFlight: 1,000 tools/call requests are in flight through
// one relay at the same time (the server answers none until it holds all of
// them), and each gets exactly one response, its own.
func TestLoadThousandInFlight(t *testing.T) {
	const n = 1000
	h := newBarrier(n)
	p := newRelayPeer(t, serveHandler(t, h))
	p.handshake(t)

	type call struct {
		id int64
		ch <-chan *jsonrpc.Message
	}
	calls := make([]call, 0, n)
	for range n {
		id, ch, err := p.start(echoLine)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call{id, ch})
	}
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for i, c := range calls {
		select {
		case m := <-c.ch:
			if m.Error != nil {
				t.Fatalf("request %d: error %d %s", c.id, m.Error.Code, m.Error.Message)
			}
			want := `"text":"` + strconv.FormatInt(c.id, 10) + `"`
			if !bytes.Contains(m.Result, []byte(want)) {
				t.Fatalf("request %d got another request's result: %s", c.id, m.Raw)
			}
		case <-deadline.C:
			t.Fatalf("%d of %d requests answered; %d reached the server", i, n, h.arrived.Load())
		}
	}
	// A duplicate would arrive after the first answer: give it a moment.
	time.Sleep(100 * time.Millisecond)
	p.close(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.responses != n+1 || p.strays != 0 {
		t.Errorf("%d responses (%d unexpected) for %d requests and initialize", p.responses, p.strays, n)
	}
	if got := h.arrived.Load(); got != n {
		t.Errorf("the server received %d tool calls, want %d", got, n)
	}
}

// TestLoadSequentialNoLeaks: 100,000 calls in a row (20,000 under the race
// detector) through one relay to the demo server leave no goroutines behind
// and no heap growth beyond noise.
func TestLoadSequentialNoLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("long load test; skipped with -short")
	}
	total := 100_000
	if raceEnabled {
		total = 20_000
	}
	checkpoint := total / 10

	baseline := runtime.NumGoroutine()
	url, _, stop, err := demo.Start(context.Background(), "", server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := newRelayPeer(t, url)
	p.handshake(t)

	var heapEarly uint64
	var goroutinesEarly int
	start := time.Now()
	for i := range total {
		if err := p.echo(30 * time.Second); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if i+1 == checkpoint {
			heapEarly, goroutinesEarly = liveHeap(), runtime.NumGoroutine()
		}
	}
	heapLate, goroutinesLate := liveHeap(), runtime.NumGoroutine()
	t.Logf("%d calls in %s; live heap after %d: %d KiB, after %d: %d KiB; goroutines %d then %d",
		total, time.Since(start).Round(time.Millisecond), checkpoint, heapEarly>>10, total, heapLate>>10, goroutinesEarly, goroutinesLate)

	// Generous slack: the point is to catch per-call growth, which over
	// 90% of the run would be megabytes or thousands of goroutines.
	if limit := heapEarly + max(heapEarly/2, 4<<20); heapLate > limit {
		t.Errorf("live heap grew from %d KiB to %d KiB between call %d and call %d", heapEarly>>10, heapLate>>10, checkpoint, total)
	}
	if goroutinesLate > goroutinesEarly+16 {
		t.Errorf("goroutines grew from %d to %d between call %d and call %d", goroutinesEarly, goroutinesLate, checkpoint, total)
	}

	p.close(t)
	stop()
	p.mu.Lock()
	responses, strays := p.responses, p.strays
	p.mu.Unlock()
	if responses != total+1 || strays != 0 {
		t.Errorf("%d responses (%d unexpected) for %d calls and initialize", responses, strays, total)
	}
	if n := settleGoroutines(baseline, 10*time.Second); n > baseline {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the relay and the server ended, %d before:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// settleGoroutines waits up to d for the goroutine count to drop to want and
// returns the last count.
func settleGoroutines(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}
