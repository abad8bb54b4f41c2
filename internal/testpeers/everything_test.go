package testpeers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, require string
		want        bool
	}{
		{"", "", false},
		{"false", "", false},
		{"0", "", false},
		{"true", "", true},
		{"1", "", true},
		{"", "1", true},
		{"false", "1", true},
		{"", "0", false},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv(requirePeersEnv, tc.require)
		if got := Required(); got != tc.want {
			t.Errorf("CI=%q %s=%q: Required() = %v, want %v", tc.ci, requirePeersEnv, tc.require, got, tc.want)
		}
	}
}

func TestRoot(t *testing.T) {
	root := Root(t)
	if root == "" {
		t.Fatalf("Root = %q", root)
	}
}

// TestEverything starts server-everything and initializes a session with it
// over plain HTTP, checking what the bridge relies on: a session id on the
// initialize response and a result naming the negotiated version.
func TestEverything(t *testing.T) {
	url := Everything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"testpeers","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST initialize: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST initialize: status %s", resp.Status)
	}
	if resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("no Mcp-Session-Id on the initialize response")
	}
	var msg struct {
		ID     int `json:"id"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			t.Fatalf("decoding initialize response: %v", err)
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		// Only the first data line with a message matters here.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok || strings.TrimSpace(data) == "" {
				continue
			}
			if err := json.Unmarshal([]byte(data), &msg); err != nil {
				t.Fatalf("decoding SSE data %q: %v", data, err)
			}
			break
		}
	default:
		t.Fatalf("unexpected Content-Type %q", ct)
	}
	if msg.ID != 1 || msg.Result.ProtocolVersion == "" {
		t.Fatalf("initialize response = %+v, want id 1 and a protocolVersion", msg)
	}
	t.Logf("session %s, protocol %s", resp.Header.Get("Mcp-Session-Id"), msg.Result.ProtocolVersion)
}

// recorder stands in for a testing.TB to see what Unavailable does.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestUnavailableSkipsUnlessRequired(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(requirePeersEnv, "")
	r := &recorder{TB: t}
	Unavailable(r, "node %d missing", 22)
	if r.failed != "" || !strings.Contains(r.skipped, "node 22 missing") || !strings.Contains(r.skipped, "scripts/setup-test-deps.sh") {
		t.Errorf("outside CI: skipped %q, failed %q; want a skip naming the set-up script", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	Unavailable(r, "node missing")
	if r.skipped != "" || !strings.Contains(r.failed, "node missing") {
		t.Errorf("in CI: skipped %q, failed %q; want a failure", r.skipped, r.failed)
	}
}
