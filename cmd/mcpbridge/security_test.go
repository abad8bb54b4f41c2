package main

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
)

// Security properties of the real binary: secrets stay out of logs,
// credentials stay with their origin, TLS is verified, plain http needs
// consent, and nothing listens.

// callErr sends a tools/call echo and returns the error message ("" on
// success).
func (p *proc) callErr(id int, msg string) string {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, id, msg))
	m := p.response(fmt.Sprint(id))
	if m.Error != nil {
		return m.Error.Message
	}
	return ""
}

// TestSecretsNeverLogged runs the bridge at debug level with credentials in
// headers and in the URL's query, through 401, 403, an HTML 500, a dropped
// connection, a session expiry and the DELETE at exit, and then looks for the
// secrets, the cookie and the full session ids in stderr, the log file and
// the JSON-RPC errors on stdout.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		bearer = "SECRET-BEARER-7f3a9c"
		apiKey = "SECRET-APIKEY-51e2b0"
		query  = "SECRET-QUERY-c4d8e1"
		cookie = "SECRET-COOKIE-a9b8c7"
	)
	var mode atomic.Value
	mode.Store("ok")
	var mu sync.Mutex
	sessions := map[string]bool{}
	url, mgr := demoServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: cookie, Path: "/"})
			if r.Method == http.MethodPost && strings.Contains(r.Header.Get("Content-Type"), "json") {
				switch mode.Load().(string) {
				case "401":
					w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
					http.Error(w, "unauthorized", http.StatusUnauthorized)
					return
				case "403":
					http.Error(w, "forbidden", http.StatusForbidden)
					return
				case "500":
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(http.StatusInternalServerError)
					io.WriteString(w, "<html><head><title>Internal error</title></head></html>")
					return
				case "vanish":
					if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
						conn.Close()
					}
					return
				}
			}
			h.ServeHTTP(w, r)
			if id := w.Header().Get("Mcp-Session-Id"); id != "" {
				mu.Lock()
				sessions[id] = true
				mu.Unlock()
			}
		})
	})
	logFile := filepath.Join(t.TempDir(), "bridge.log")
	p := start(t, nil, "--url", url+"?token="+query,
		"--header", "Authorization: Bearer "+bearer,
		"--header", "X-Api-Key: "+apiKey,
		"--log-level", "debug", "--log-file", logFile)
	var stdout strings.Builder
	p.initialize()
	id := 1
	for _, m := range []string{"ok", "401", "403", "500", "vanish", "ok"} {
		mode.Store(m)
		e := p.callErr(id, "x")
		id++
		if (m == "ok") != (e == "") {
			t.Errorf("mode %s: error %q", m, e)
		}
		stdout.WriteString(e + "\n")
	}
	mgr.TerminateAll()
	if e := p.callErr(id, "after expiry"); e != "" {
		t.Errorf("after expiry: %s", e)
	}
	p.stdin.Close()
	if err := p.wait(10 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sessions) < 2 {
		t.Fatalf("saw %d sessions, want at least 2 (expiry)", len(sessions))
	}
	if !strings.Contains(string(logged), "level=DEBUG") {
		t.Error("the log file has no debug lines: was debug logging on?")
	}
	secrets := []string{bearer, apiKey, query, cookie}
	for s := range sessions {
		secrets = append(secrets, s)
	}
	for name, text := range map[string]string{"stderr": p.stderr.String(), "log file": string(logged), "stdout errors": stdout.String()} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q", name, s)
			}
		}
	}
}

// demoHandler is the demo MCP server as a plain handler.
func demoHandler(t *testing.T) http.Handler {
	t.Helper()
	_, mgr := demoServer(t, nil)
	return mgr
}

// headerLog records the credential headers a server received.
type headerLog struct {
	mu   sync.Mutex
	auth []string
	key  []string
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.auth = append(l.auth, r.Header.Get("Authorization"))
		l.key = append(l.key, r.Header.Get("X-Api-Key"))
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) sawCredentials() (requests, withAuth, withKey int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.auth {
		requests++
		if l.auth[i] != "" {
			withAuth++
		}
		if l.key[i] != "" {
			withKey++
		}
	}
	return
}

// TestRedirectCredentials: a 307 to another origin (another port is another
// origin) loses Authorization and the custom credential header; a redirect
// within the origin keeps them.
func TestRedirectCredentials(t *testing.T) {
	mgr := demoHandler(t)
	creds := []string{"--header", "Authorization: Bearer SECRET-REDIRECT", "--header", "X-Api-Key: SECRET-KEY"}

	t.Run("other origin", func(t *testing.T) {
		// The session id is withheld from another origin too (it is a
		// capability of the session), so the target here is stateless.
		stateless, err := server.New(demo.New(nil), server.Options{Stateless: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go stateless.Run(ctx)
		<-stateless.Ready()
		var other headerLog
		b := httptest.NewServer(other.wrap(stateless))
		defer b.Close()
		a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, b.URL+"/mcp", http.StatusTemporaryRedirect)
		}))
		defer a.Close()
		p := start(t, nil, append([]string{"--url", a.URL + "/mcp"}, creds...)...)
		p.initialize()
		if got := p.echo(1, "via redirect"); got != "via redirect" {
			t.Errorf("echo = %q", got)
		}
		p.stdin.Close()
		p.wait(10 * time.Second)
		n, withAuth, withKey := other.sawCredentials()
		if n == 0 {
			t.Fatal("the redirect target saw no requests")
		}
		if withAuth != 0 || withKey != 0 {
			t.Errorf("the other origin received credentials: Authorization on %d and X-Api-Key on %d of %d requests", withAuth, withKey, n)
		}
	})

	t.Run("same origin", func(t *testing.T) {
		var same headerLog
		mux := http.NewServeMux()
		mux.Handle("/new/mcp", same.wrap(mgr))
		mux.Handle("/mcp", http.RedirectHandler("/new/mcp", http.StatusTemporaryRedirect))
		a := httptest.NewServer(mux)
		defer a.Close()
		p := start(t, nil, append([]string{"--url", a.URL + "/mcp"}, creds...)...)
		p.initialize()
		p.echo(1, "x")
		p.stdin.Close()
		p.wait(10 * time.Second)
		n, withAuth, withKey := same.sawCredentials()
		if n == 0 || withAuth != n || withKey != n {
			t.Errorf("same-origin redirect: %d requests, Authorization on %d, X-Api-Key on %d; want all", n, withAuth, withKey)
		}
	})
}

// TestTLSVerification: certificates are verified by default; --ca-file adds
// a trusted CA (here the test server's own certificate).
func TestTLSVerification(t *testing.T) {
	srv := httptest.NewTLSServer(demoHandler(t))
	defer srv.Close()
	url := srv.URL + "/mcp"

	p := start(t, nil, "--url", url)
	p.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	m := p.response(`"init"`)
	if m.Error == nil || !strings.Contains(m.Error.Message, "certificate") {
		t.Errorf("initialize against an untrusted certificate: %s", m.Raw)
	}
	p.stdin.Close()
	p.wait(10 * time.Second)

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	p = start(t, nil, "--url", url, "--ca-file", caFile)
	p.initialize()
	if got := p.echo(1, "over tls"); got != "over tls" {
		t.Errorf("echo = %q", got)
	}
	p.stdin.Close()
	if err := p.wait(10 * time.Second); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// nonLoopbackIP returns an address of this machine that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return ""
}

// TestPlainHTTPNeedsConsent: http:// to a host that is not loopback is
// refused before anything is sent, unless --allow-http.
func TestPlainHTTPNeedsConsent(t *testing.T) {
	ip := nonLoopbackIP(t)
	var hits atomic.Int64
	mgr := demoHandler(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mgr.ServeHTTP(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	url := srv.URL + "/mcp"

	cmd := exec.Command(os.Args[0], "--url", url, "--header", "Authorization: Bearer SECRET")
	cmd.Env = append(os.Environ(), "MCPBRIDGE_E2E_CHILD=1")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "plain http") {
		t.Errorf("http to %s without --allow-http: %v, output %q", ip, err, out)
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests were sent before the refusal", hits.Load())
	}

	p := start(t, nil, "--url", url, "--allow-http")
	p.initialize()
	if got := p.echo(1, "plain"); got != "plain" {
		t.Errorf("echo with --allow-http = %q", got)
	}
	p.stdin.Close()
	p.wait(10 * time.Second)
}

// TestNoListeningSockets: in headless mode the bridge opens no listening
// socket (TCP, UDP or unix), while a session with its GET stream is live.
func TestNoListeningSockets(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	url, _ := demoServer(t, nil)
	p := start(t, nil, "--url", url, "--log-level", "debug")
	p.initialize()
	p.echo(1, "x")
	time.Sleep(100 * time.Millisecond) // the GET stream is open by now
	pid := p.cmd.Process.Pid

	inodes := socketInodes(t, pid)
	if len(inodes) == 0 {
		t.Fatal("the bridge has no sockets at all: is it talking to the server?")
	}
	for _, f := range []string{"tcp", "tcp6", "udp", "udp6"} {
		for _, l := range procNetLines(t, pid, f) {
			// sl local rem st tx:rx tr:when retr uid timeout inode
			if len(l) < 10 || !inodes[l[9]] {
				continue
			}
			listening := l[3] == "0A" // TCP_LISTEN
			if f == "udp" || f == "udp6" {
				listening = true // any bound UDP socket receives
			}
			if listening {
				t.Errorf("the bridge listens: /proc/%d/net/%s: %s", pid, f, strings.Join(l, " "))
			}
		}
	}
	for _, l := range procNetLines(t, pid, "unix") {
		// Num RefCount Protocol Flags Type St Inode [Path]
		if len(l) < 7 || !inodes[l[6]] {
			continue
		}
		if flags, err := strconv.ParseUint(l[3], 16, 32); err == nil && flags&0x10000 != 0 { // __SO_ACCEPTCON
			t.Errorf("the bridge listens on a unix socket: %s", strings.Join(l, " "))
		}
	}
	p.stdin.Close()
	p.wait(10 * time.Second)
}

// socketInodes lists the inodes of the sockets process pid holds open.
func socketInodes(t *testing.T, pid int) map[string]bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("cannot read %s: %v", dir, err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			out[strings.TrimSuffix(ino, "]")] = true
		}
	}
	return out
}

// procNetLines returns the fields of each entry of /proc/<pid>/net/<file>.
func procNetLines(t *testing.T, pid int, file string) [][]string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, file))
	if err != nil {
		return nil // no IPv6, say
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		out = append(out, strings.Fields(sc.Text()))
	}
	return out
}
