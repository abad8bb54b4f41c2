package testpeers

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Everything starts @modelcontextprotocol/server-everything in streamableHttp
// mode on a free loopback port and returns its endpoint URL,
// http://127.0.0.1:<port>/mcp. It returns once the server accepts
// connections; the server (its whole process group) is stopped at t's
// cleanup, and its output goes to t.Log.
//
// The server is stateful with an in-memory event store (resumption via
// Last-Event-ID), and answers requests for unknown sessions with 400.
func Everything(t testing.TB) string {
	t.Helper()
	node := NodePath(t)
	script := EverythingScript(t)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("server-everything: finding a free port: %v", err)
		}
		cmd := exec.Command(node, script, "streamableHttp")
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		cmd.Dir = t.TempDir()
		p := startPeer(t, "server-everything", cmd)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = waitListening(p, addr, 30*time.Second); lastErr == nil {
			return "http://" + addr + "/mcp"
		}
		// Most likely the port was taken between freePort and listen; the
		// cleanup registered by startPeer stops what is left.
		select {
		case <-p.exited:
		default:
			p.stop(t, "server-everything")
		}
	}
	t.Fatalf("server-everything did not start: %v", lastErr)
	return ""
}

// freePort returns a TCP port that was free on the loopback interface a
// moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening polls addr until it accepts a connection, p exits, or the
// timeout passes.
func waitListening(p *peer, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before listening on %s: %v", addr, p.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after %v: %v", addr, timeout, err)
		}
	}
}
