package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// The benchmarks measure one tools/call echo from the desktop's side of
// stdio: through the relay to the demo server on loopback, and, for the
// floor, to the demo tools served over stdio with no bridge and no HTTP
// (demo.ServeStdio). Both run in this process over io.Pipe; the difference
// is what the bridge adds. scripts/bench.sh measures the real binary.
//
//	go test -tags nogui -run '^$' -bench . -benchtime 2000x ./internal/bridge/

// rpcPeer is a lean desktop client for benchmarks and load tests: it writes
// requests on a stdio server's stdin and matches the responses on its stdout
// to the callers by id, counting every response it sees.
type rpcPeer struct {
	in     *io.PipeWriter
	w      *stdio.Writer
	nextID atomic.Int64

	mu        sync.Mutex
	waiting   map[string]chan *jsonrpc.Message
	responses int // responses seen
	strays    int // responses nobody waited for: unknown ids, or a second answer
	readErr   error

	readDone chan struct{} // the server's stdout ended
	runDone  chan error    // the server (relay or floor) returned
}

// newPeer starts serve on a pair of pipes and reads its output.
func newPeer(serve func(in io.Reader, out io.Writer) error) *rpcPeer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &rpcPeer{
		in:       inW,
		w:        stdio.NewWriter(inW),
		waiting:  map[string]chan *jsonrpc.Message{},
		readDone: make(chan struct{}),
		runDone:  make(chan error, 1),
	}
	go func() {
		err := serve(inR, outW)
		outW.Close()
		inR.Close()
		p.runDone <- err
	}()
	go p.readLoop(outR)
	return p
}

// newRelayPeer runs a relay to url, without logging.
func newRelayPeer(tb testing.TB, url string) *rpcPeer {
	tb.Helper()
	c, err := NewClient(ClientOptions{URL: url})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := NewRelay(RelayOptions{Client: c})
	if err != nil {
		tb.Fatal(err)
	}
	return newPeer(func(in io.Reader, out io.Writer) error { return r.Run(context.Background(), in, out) })
}

// newFloorPeer serves the demo tools over stdio directly: no relay, no HTTP.
func newFloorPeer(tb testing.TB) *rpcPeer {
	tb.Helper()
	return newPeer(func(in io.Reader, out io.Writer) error {
		return demo.ServeStdio(context.Background(), demo.New(nil), in, out)
	})
}

func (p *rpcPeer) readLoop(out io.Reader) {
	defer close(p.readDone)
	rd := stdio.NewReader(out, 0)
	for {
		line, err := rd.ReadLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.mu.Lock()
				p.readErr = err
				p.mu.Unlock()
			}
			return
		}
		m, err := jsonrpc.Parse(line)
		if err != nil {
			p.mu.Lock()
			p.readErr = fmt.Errorf("server wrote a line that is not JSON-RPC: %w", err)
			p.mu.Unlock()
			continue
		}
		if m.Kind() != jsonrpc.KindResponse {
			continue
		}
		key := m.IDKey()
		p.mu.Lock()
		p.responses++
		ch := p.waiting[key]
		delete(p.waiting, key)
		if ch == nil {
			p.strays++
		}
		p.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// start sends a request built by line (given its id) and returns the channel
// its response will arrive on.
func (p *rpcPeer) start(line func(id int64) []byte) (int64, <-chan *jsonrpc.Message, error) {
	id := p.nextID.Add(1)
	ch := make(chan *jsonrpc.Message, 1)
	p.mu.Lock()
	p.waiting[strconv.FormatInt(id, 10)] = ch
	p.mu.Unlock()
	if err := p.w.Write(line(id)); err != nil {
		return id, nil, err
	}
	return id, ch, nil
}

// call sends one request and waits for its response.
func (p *rpcPeer) call(line func(id int64) []byte, timeout time.Duration) (*jsonrpc.Message, error) {
	id, ch, err := p.start(line)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		if m.Error != nil {
			return m, fmt.Errorf("request %d: error %d %s", id, m.Error.Code, m.Error.Message)
		}
		return m, nil
	case <-p.readDone:
		return nil, fmt.Errorf("request %d: the server's output ended", id)
	case <-t.C:
		return nil, fmt.Errorf("request %d: no response within %s", id, timeout)
	}
}

// handshake runs initialize and notifications/initialized.
func (p *rpcPeer) handshake(tb testing.TB) {
	tb.Helper()
	_, err := p.call(func(id int64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, id)
	}, 30*time.Second)
	if err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	if err := p.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		tb.Fatal(err)
	}
}

// echoLine is a tools/call of the demo's echo tool.
func echoLine(id int64) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello through the bridge"}}}`...)
	return b
}

// echo calls the echo tool and checks the answer.
func (p *rpcPeer) echo(timeout time.Duration) error {
	m, err := p.call(echoLine, timeout)
	if err != nil {
		return err
	}
	if !bytes.Contains(m.Result, []byte(`"hello through the bridge"`)) {
		return fmt.Errorf("unexpected echo result: %s", m.Raw)
	}
	return nil
}

// close ends the server's stdin and waits for it to return.
func (p *rpcPeer) close(tb testing.TB) {
	tb.Helper()
	p.in.Close()
	select {
	case err := <-p.runDone:
		if err != nil {
			tb.Errorf("server returned %v", err)
		}
	case <-time.After(30 * time.Second):
		tb.Error("server did not return within 30s of stdin EOF")
	}
	<-p.readDone
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readErr != nil {
		tb.Errorf("reading the server's output: %v", p.readErr)
	}
}

// benchTarget is something a desktop client can talk to over stdio.
type benchTarget struct {
	name  string
	start func(b *testing.B) *rpcPeer
}

var benchTargets = []benchTarget{
	{"relay", func(b *testing.B) *rpcPeer {
		url, _, stop, err := demo.Start(context.Background(), "", server.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(stop)
		return newRelayPeer(b, url)
	}},
	{"stdio-floor", func(b *testing.B) *rpcPeer { return newFloorPeer(b) }},
}

// reportLatency adds p50 and p99 (µs) of lat to the benchmark's figures.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(f float64) float64 {
		i := int(f * float64(len(lat)-1))
		return float64(lat[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// warm makes a few calls so connections and buffers exist before timing.
func warm(b *testing.B, p *rpcPeer) {
	for range 50 {
		if err := p.echo(30 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallSequential: one tools/call echo at a time.
func BenchmarkCallSequential(b *testing.B) {
	for _, tgt := range benchTargets {
		b.Run(tgt.name, func(b *testing.B) {
			p := tgt.start(b)
			defer p.close(b)
			p.handshake(b)
			warm(b, p)
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := p.echo(30 * time.Second); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// BenchmarkCallParallel16: 16 calls in flight at all times; ns/op is wall
// time divided by calls, so 1e9/(ns/op) is calls per second.
func BenchmarkCallParallel16(b *testing.B) {
	const inFlight = 16
	for _, tgt := range benchTargets {
		b.Run(tgt.name, func(b *testing.B) {
			p := tgt.start(b)
			defer p.close(b)
			p.handshake(b)
			warm(b, p)
			var next atomic.Int64
			lats := make([][]time.Duration, inFlight)
			errs := make(chan error, inFlight)
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for w := range inFlight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if err := p.echo(30 * time.Second); err != nil {
							errs <- err
							return
						}
						lats[w] = append(lats[w], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			reportLatency(b, slices.Concat(lats...))
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
		})
	}
}
