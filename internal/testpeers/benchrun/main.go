// Command benchrun measures the real mcpbridge binary over stdio, as a desktop
// client sees it, against the demo server running in this process on
// loopback:
//
//   - start-up: process start to the initialize response (median of N runs);
//   - latency of one tools/call echo, sequential (p50, p99), beside the same
//     calls to `mcpbridge serve --stdio` (the demo tools with no bridge: the
//     floor) and the difference, which is what the bridge adds;
//   - calls per second with 16 in flight;
//   - peak RSS of the bridge during those calls, and while it relays one
//     50 MB tool result.
//
// With -mcp-remote it measures the Node bridge mcp-remote the same way. It
// prints a markdown table. scripts/bench.sh runs it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

type config struct {
	bin       string
	startups  int
	calls     int
	parCalls  int
	inFlight  int
	bigBytes  int
	mcpRemote string
	node      string
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "", "mcpbridge binary to measure (default: build one with go build -tags nogui -trimpath)")
	flag.IntVar(&c.startups, "startups", 20, "start-up runs (the median is reported)")
	flag.IntVar(&c.calls, "calls", 2000, "sequential tools/call echo calls for latency")
	flag.IntVar(&c.parCalls, "parallel-calls", 10000, "calls for the throughput run")
	flag.IntVar(&c.inFlight, "in-flight", 16, "calls in flight during the throughput run")
	flag.IntVar(&c.bigBytes, "big", 50<<20, "size of the large tool result in bytes (0 skips)")
	flag.StringVar(&c.mcpRemote, "mcp-remote", "", "path of mcp-remote's dist/proxy.js to measure for comparison (optional)")
	flag.StringVar(&c.node, "node", "node", "node binary for -mcp-remote")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "benchrun: %v\n", err)
		os.Exit(1)
	}
}

// row is one line of the results table.
type row struct {
	name            string
	startup         time.Duration // median
	p50, p99        time.Duration
	addP50, addP99  time.Duration
	hasAdded        bool
	rps             float64
	rssSmall        int64 // bytes
	rssBig          int64 // bytes
	bigOK           bool
	notes           []string
	skipped         string
	measuredLatency bool
}

func run(c config) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "mcpbridge-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if c.bin == "" {
		c.bin = filepath.Join(tmp, "mcpbridge")
		logf("building %s", c.bin)
		cmd := exec.Command("go", "build", "-tags", "nogui", "-trimpath", "-o", c.bin, "./cmd/mcpbridge")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building mcpbridge (run from the module root): %w", err)
		}
	}
	url, _, stop, err := demo.Start(ctx, "", server.Options{})
	if err != nil {
		return err
	}
	defer stop()
	logf("demo server at %s", url)

	floor := target{name: "`mcpbridge serve --stdio` (floor, no bridge)", argv: []string{c.bin, "serve", "--stdio", "--log-level", "error"}}
	bridge := target{name: "mcpbridge", argv: []string{c.bin, "--url", url, "--log-level", "error"}}
	targets := []target{bridge, floor}
	if c.mcpRemote != "" {
		home := filepath.Join(tmp, "mcp-remote-home")
		targets = append(targets, target{
			name: "mcp-remote (Node " + nodeVersion(c.node) + ")",
			argv: []string{c.node, c.mcpRemote, url, "--transport", "http-only", "--allow-http", "--silent"},
			env:  []string{"HOME=" + home, "MCP_REMOTE_CONFIG_DIR=" + filepath.Join(home, ".mcp-auth")},
		})
	}

	var rows []*row
	for _, t := range targets {
		logf("measuring %s", t.name)
		r := measure(c, t)
		rows = append(rows, r)
	}
	// What the bridge adds: its latency minus the floor's.
	if f := rows[1]; f.measuredLatency {
		for _, r := range rows {
			if r != f && r.measuredLatency {
				r.addP50, r.addP99, r.hasAdded = r.p50-f.p50, r.p99-f.p99, true
			}
		}
	}
	printTable(os.Stdout, c, rows)
	return nil
}

func measure(c config, t target) *row {
	r := &row{name: t.name}
	// (a) start-up: process start to the initialize response.
	var starts []time.Duration
	for i := range c.startups {
		d, err := startup(t)
		if err != nil {
			r.skipped = fmt.Sprintf("start-up run %d failed: %v", i+1, err)
			logf("%s: %s", t.name, r.skipped)
			return r
		}
		starts = append(starts, d)
	}
	r.startup = median(starts)

	// (b), (c), (d): one session for sequential then parallel calls.
	p, err := t.start()
	if err != nil {
		r.skipped = err.Error()
		return r
	}
	if err := p.handshake(); err != nil {
		p.kill()
		r.skipped = "initialize: " + err.Error()
		return r
	}
	for range 100 { // warm-up: connections, buffers, JIT
		if _, err := p.echo(); err != nil {
			p.kill()
			r.skipped = "warm-up call: " + err.Error()
			return r
		}
	}
	lat := make([]time.Duration, 0, c.calls)
	for range c.calls {
		d, err := p.echo()
		if err != nil {
			p.kill()
			r.skipped = "sequential call: " + err.Error()
			return r
		}
		lat = append(lat, d)
	}
	r.p50, r.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	r.measuredLatency = true

	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	begin := time.Now()
	for range c.inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(c.parCalls) {
				if _, err := p.echo(); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		r.notes = append(r.notes, "parallel run failed: "+err.Error())
	} else {
		r.rps = float64(c.parCalls) / time.Since(begin).Seconds()
	}
	r.rssSmall = p.finish()

	// (e) peak RSS while relaying one large result, in a fresh process.
	if c.bigBytes > 0 {
		r.rssBig, r.bigOK = bigResult(t, c.bigBytes, &r.notes)
	}
	return r
}

// startup times one process from start to its initialize response.
func startup(t target) (time.Duration, error) {
	t0 := time.Now()
	p, err := t.start()
	if err != nil {
		return 0, err
	}
	if err := p.handshake(); err != nil {
		p.kill()
		return 0, err
	}
	d := p.initDone.Sub(t0)
	p.finish()
	return d, nil
}

func bigResult(t target, n int, notes *[]string) (int64, bool) {
	p, err := t.start()
	if err != nil {
		*notes = append(*notes, "large result: "+err.Error())
		return 0, false
	}
	if err := p.handshake(); err != nil {
		p.kill()
		*notes = append(*notes, "large result: initialize: "+err.Error())
		return 0, false
	}
	m, err := p.call(func(id int64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"bytes":%d}}}`, id, n)
	}, 2*time.Minute)
	ok := err == nil && len(m.Raw) > n
	if !ok {
		if err == nil {
			err = fmt.Errorf("result of %d bytes", len(m.Raw))
		}
		*notes = append(*notes, "large result failed: "+err.Error())
	}
	m = nil
	return p.finish(), ok
}

// target is a stdio MCP server process to measure.
type target struct {
	name string
	argv []string
	env  []string
}

// proc is one running target, driven over its stdin and stdout.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *stdio.Writer
	stderr *limitedWriter
	nextID atomic.Int64

	mu       sync.Mutex
	waiting  map[string]chan *jsonrpc.Message
	readErr  error
	readDone chan struct{}
	initDone time.Time
}

func (t target) start() (*proc, error) {
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	cmd.Env = append(os.Environ(), t.env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, w: stdio.NewWriter(stdin), stderr: &limitedWriter{max: 64 << 10}, waiting: map[string]chan *jsonrpc.Message{}, readDone: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go p.readLoop(stdout)
	return p, nil
}

func (p *proc) readLoop(out io.Reader) {
	defer close(p.readDone)
	rd := stdio.NewReader(bufio.NewReaderSize(out, 1<<20), 0)
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
		if err != nil || m.Kind() != jsonrpc.KindResponse {
			continue
		}
		key := m.IDKey()
		p.mu.Lock()
		ch := p.waiting[key]
		delete(p.waiting, key)
		p.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (p *proc) call(line func(id int64) []byte, timeout time.Duration) (*jsonrpc.Message, error) {
	id := p.nextID.Add(1)
	ch := make(chan *jsonrpc.Message, 1)
	p.mu.Lock()
	p.waiting[strconv.FormatInt(id, 10)] = ch
	p.mu.Unlock()
	if err := p.w.Write(line(id)); err != nil {
		return nil, fmt.Errorf("writing to the process: %w%s", err, p.stderrTail())
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		if m.Error != nil {
			return m, fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
		}
		return m, nil
	case <-p.readDone:
		return nil, fmt.Errorf("the process's stdout ended%s", p.stderrTail())
	case <-t.C:
		return nil, fmt.Errorf("no response within %s%s", timeout, p.stderrTail())
	}
}

func (p *proc) stderrTail() string {
	s := strings.TrimSpace(p.stderr.String())
	if s == "" {
		return ""
	}
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return " (stderr: " + s + ")"
}

func (p *proc) handshake() error {
	_, err := p.call(func(id int64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"benchrun","version":"1"}}}`, id)
	}, 30*time.Second)
	p.initDone = time.Now()
	if err != nil {
		return err
	}
	return p.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

func echoLine(id int64) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello through the bridge"}}}`...)
}

// echo makes one tools/call echo and returns how long it took.
func (p *proc) echo() (time.Duration, error) {
	t0 := time.Now()
	m, err := p.call(echoLine, 30*time.Second)
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if !bytes.Contains(m.Result, []byte(`"hello through the bridge"`)) {
		return d, fmt.Errorf("unexpected result %s", m.Raw)
	}
	return d, nil
}

// finish reads the peak RSS of the process (VmHWM) while it still runs, then
// closes its stdin and waits for it to exit. It returns the peak in bytes.
// wait4's maxrss is not used: on Linux it can report the parent's RSS, which
// the child shared between fork and exec.
func (p *proc) finish() int64 {
	hwm := vmHWM(p.cmd.Process.Pid)
	p.stdin.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		logf("%s did not exit within 10s of stdin EOF; killing it", p.cmd.Path)
		p.cmd.Process.Kill()
		<-done
	}
	return hwm
}

func (p *proc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// vmHWM reads the peak resident set size of pid from /proc, in bytes.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// limitedWriter keeps the first max bytes written to it.
type limitedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (l *limitedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

func median(ds []time.Duration) time.Duration { return percentile(ds, 0.5) }

func percentile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(math.Round(q*float64(len(s)-1)))]
}

func nodeVersion(node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchrun: "+format+"\n", args...)
}

func ms(d time.Duration) string  { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1e3) }
func mss(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Nanoseconds())/1e6) }
func mib(b int64) string         { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func printTable(w io.Writer, c config, rows []*row) {
	fmt.Fprintf(w, "Go %s, %s/%s, %d CPUs; demo server in-process on loopback (SSE responses).\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(w, "Start-up: median of %d runs. Latency: %d sequential tools/call echo. Throughput: %d calls, %d in flight. Large: one %d-byte tool result.\n\n",
		c.startups, c.calls, c.parCalls, c.inFlight, c.bigBytes)
	fmt.Fprintln(w, "| stdio server | start-up to initialize | p50 / call | p99 / call | added p50 / p99 (vs floor) | calls/s (16 in flight) | peak RSS, small calls | peak RSS, large result |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		if r.skipped != "" && !r.measuredLatency && r.startup == 0 {
			fmt.Fprintf(w, "| %s | failed: %s | | | | | | |\n", r.name, strings.ReplaceAll(r.skipped, "|", "/"))
			continue
		}
		cell := func(ok bool, s string) string {
			if !ok {
				return "–"
			}
			return s
		}
		added := "–"
		if r.hasAdded {
			added = mss(r.addP50) + " / " + mss(r.addP99)
		}
		big := "–"
		if r.rssBig > 0 {
			big = mib(r.rssBig)
			if c.bigBytes > 0 {
				big += fmt.Sprintf(" (%.1fx)", float64(r.rssBig)/float64(c.bigBytes))
			}
			if !r.bigOK {
				big += " (failed)"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name,
			ms(r.startup),
			cell(r.measuredLatency, mss(r.p50)), cell(r.measuredLatency, mss(r.p99)),
			added,
			cell(r.rps > 0, fmt.Sprintf("%.0f", r.rps)),
			cell(r.rssSmall > 0, mib(r.rssSmall)), big)
	}
	for _, r := range rows {
		for _, n := range r.notes {
			fmt.Fprintf(w, "\n- %s: %s", r.name, n)
		}
		if r.skipped != "" {
			fmt.Fprintf(w, "\n- %s: %s", r.name, r.skipped)
		}
	}
	fmt.Fprintln(w)
}
