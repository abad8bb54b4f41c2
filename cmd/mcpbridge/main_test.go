package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/faultproxy"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
)

// The test binary doubles as mcpbridge: with MCPBRIDGE_E2E_CHILD=1 it runs
// main, so these tests drive the real program over real pipes and signals.
func TestMain(m *testing.M) {
	if os.Getenv("MCPBRIDGE_E2E_CHILD") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// proc is a running mcpbridge.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *lockedBuf
	done   chan error
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "MCPBRIDGE_E2E_CHILD=1"), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 256), stderr: &lockedBuf{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("mcpbridge stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

func (p *proc) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, s+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next stdout message; every line must be JSON-RPC.
func (p *proc) next() *jsonrpc.Message {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("stdout closed")
		}
		m, err := jsonrpc.Parse(line)
		if err != nil {
			p.t.Fatalf("stdout carried something that is not JSON-RPC: %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no output within 30s")
	}
	return nil
}

// response skips notifications up to the response to id.
func (p *proc) response(id string) *jsonrpc.Message {
	p.t.Helper()
	for {
		m := p.next()
		if m.Kind() == jsonrpc.KindResponse && m.IDKey() == id {
			return m
		}
	}
}

func (p *proc) initialize() {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if m := p.response(`"init"`); m.Error != nil {
		p.t.Fatalf("initialize: %s", m.Raw)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (p *proc) echo(id int, msg string) string {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, id, msg))
	m := p.response(fmt.Sprint(id))
	if m.Error != nil {
		p.t.Fatalf("echo: %s", m.Raw)
	}
	var r struct{ Content []struct{ Text string } }
	json.Unmarshal(m.Result, &r)
	if len(r.Content) == 0 {
		p.t.Fatalf("echo result: %s", m.Result)
	}
	return r.Content[0].Text
}

func (p *proc) wait(d time.Duration) error {
	p.t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(d):
		p.t.Fatalf("mcpbridge did not exit within %s", d)
	}
	return nil
}

func demoServer(t *testing.T, wrap func(http.Handler) http.Handler) (string, *server.Manager) {
	t.Helper()
	mgr, err := server.New(demo.New(nil), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go mgr.Run(ctx)
	<-mgr.Ready()
	var h http.Handler = mgr
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); cancel() })
	return srv.URL + "/mcp", mgr
}

// TestStdioEndToEnd: the real binary over stdio: a session, expiry recovery,
// -32700 for a bad line, DELETE on stdin EOF and exit 0.
func TestStdioEndToEnd(t *testing.T) {
	url, mgr := demoServer(t, nil)
	p := start(t, nil, "--url", url, "--log-level", "debug")
	p.initialize()
	if got := p.echo(1, "hello"); got != "hello" {
		t.Errorf("echo = %q", got)
	}
	p.send(`this is not json`)
	if m := p.next(); m.Error == nil || m.Error.Code != jsonrpc.CodeParseError || string(m.ID) != "null" {
		t.Errorf("bad line: %s", m.Raw)
	}
	mgr.TerminateAll()
	if got := p.echo(2, "after expiry"); got != "after expiry" {
		t.Errorf("echo after expiry = %q", got)
	}
	if !strings.Contains(p.stderr.String(), "re-initializing") {
		t.Error("the logs do not say the session was re-established")
	}
	if n := mgr.SessionCount(); n != 1 {
		t.Errorf("sessions = %d, want 1", n)
	}
	p.stdin.Close()
	if err := p.wait(10 * time.Second); err != nil {
		t.Errorf("exit after stdin EOF: %v", err)
	}
	if n := mgr.SessionCount(); n != 0 {
		t.Errorf("sessions after exit = %d, want 0 (DELETE)", n)
	}
	if _, ok := <-p.lines; ok {
		t.Error("extra output on stdout")
	}
}

// TestSIGTERM: a signal ends the bridge promptly with exit 0 and a DELETE.
func TestSIGTERM(t *testing.T) {
	url, mgr := demoServer(t, nil)
	p := start(t, nil, "--url", url)
	p.initialize()
	p.echo(1, "x")
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(10 * time.Second); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if n := mgr.SessionCount(); n != 0 {
		t.Errorf("sessions after SIGTERM = %d, want 0", n)
	}
}

// TestBadArguments: a one-line error naming the problem, exit 2, nothing sent.
func TestBadArguments(t *testing.T) {
	hits := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer srv.Close()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--url", "ftp://example.com/mcp"}, "scheme"},
		{[]string{"--url", "http://example.com/mcp"}, "plain http"},
		{[]string{"--url", "::not a url"}, "invalid URL"},
		{[]string{}, "no server URL"},
		{[]string{"--url", srv.URL, "--header", "NoColonHere"}, "invalid header"},
		{[]string{"--url", srv.URL, "--frobnicate"}, "frobnicate"},
		{[]string{"--url", srv.URL, "--log-level", "loud"}, "log-level"},
		{[]string{"--url", srv.URL, "--ca-file", "/nonexistent.pem"}, "CA file"},
	}
	for _, c := range cases {
		args := append([]string{"run"}, c.args...)
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "MCPBRIDGE_E2E_CHILD=1")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: exit %v, want 2 (output %q)", c.args, err, out)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%v: output %q lacks %q", c.args, out, c.want)
		}
	}
	if hits != 0 {
		t.Errorf("%d requests reached the server from bad invocations", hits)
	}
}

// TestNamedEndpointLiveReload: a running bridge for a named endpoint picks
// up a changed header on the next request without losing its session, and
// ends with a clear error when the endpoint is removed.
func TestNamedEndpointLiveReload(t *testing.T) {
	type seen struct{ key, session string }
	var mu sync.Mutex
	var log []seen
	url, mgr1 := demoServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				mu.Lock()
				log = append(log, seen{r.Header.Get("X-Api-Key"), r.Header.Get("Mcp-Session-Id")})
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	env := []string{"MCPBRIDGE_CONFIG_DIR=" + dir, "MCPBRIDGE_STATE_DIR=" + filepath.Join(dir, "state")}
	cli := func(args ...string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(append(os.Environ(), "MCPBRIDGE_E2E_CHILD=1"), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("mcpbridge %v: %v\n%s", args, err, out)
		}
	}
	cli("endpoint", "add", "--name", "demo", "--url", url, "--header", "X-Api-Key: one")
	p := start(t, env, "run", "demo", "--log-level", "debug")
	p.initialize()
	p.echo(1, "a")
	cli("endpoint", "edit", "demo", "--header", "X-Api-Key: two")
	// The watcher debounces; the next request after it fires carries the new
	// value. Poll with requests until it does (bounded).
	deadline := time.Now().Add(10 * time.Second)
	for i := 2; ; i++ {
		p.echo(i, "b")
		mu.Lock()
		last := log[len(log)-1]
		mu.Unlock()
		if last.key == "two" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new header value never reached the server (last %q)", last.key)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	sessions := map[string]bool{}
	for _, s := range log[1:] { // after initialize
		sessions[s.session] = true
	}
	mu.Unlock()
	if len(sessions) != 1 {
		t.Errorf("the session changed across a header reload: %v", sessions)
	}
	// A status file is published while running.
	entries, _ := os.ReadDir(filepath.Join(dir, "state"))
	if len(entries) == 0 {
		t.Error("no status file published")
	}
	// A new URL starts a new session at the new server; the client notices
	// nothing.
	url2, mgr2 := demoServer(t, nil)
	cli("endpoint", "edit", "demo", "--url", url2)
	deadline = time.Now().Add(10 * time.Second)
	for i := 100; mgr2.SessionCount() == 0; i++ {
		if got := p.echo(i, "moved"); got != "moved" {
			t.Fatalf("echo during the move = %q", got)
		}
		if time.Now().After(deadline) {
			t.Fatal("the bridge never opened a session at the new URL")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := p.echo(200, "at the new server"); got != "at the new server" {
		t.Errorf("echo at the new URL = %q", got)
	}
	if n := mgr1.SessionCount(); n != 0 {
		t.Errorf("the old server still has %d sessions: the move did not end the old one", n)
	}
	cli("endpoint", "remove", "demo")
	err := p.wait(15 * time.Second)
	if err == nil {
		t.Error("bridge exited 0 after its endpoint was removed; want a failure")
	}
	if !strings.Contains(p.stderr.String(), "removed") {
		t.Errorf("stderr does not say the endpoint was removed:\n%s", p.stderr.String())
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "state")); len(entries) != 0 {
		t.Errorf("status file left behind: %v", entries)
	}
}

// TestHonoursHTTPProxy: HTTP_PROXY is used the Go way (no flag needed); the
// proxy sees requests for the remote host and forwards them.
func TestHonoursHTTPProxy(t *testing.T) {
	url, _ := demoServer(t, nil)
	var mu sync.Mutex
	var hosts []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.URL.Host)
		mu.Unlock()
		// Forward to the demo server whatever host was asked for.
		faultproxy.Forward(w, r, url)
	}))
	defer proxy.Close()
	p := start(t, []string{"HTTP_PROXY=" + proxy.URL, "NO_PROXY="}, "--url", "http://mcp.example.invalid/mcp", "--allow-http")
	p.initialize()
	if got := p.echo(1, "via proxy"); got != "via proxy" {
		t.Errorf("echo = %q", got)
	}
	p.stdin.Close()
	p.wait(10 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) == 0 || hosts[0] != "mcp.example.invalid" {
		t.Errorf("proxy saw hosts %v", hosts)
	}
}
