package bridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpbridge/mcpbridge/internal/bridge/faultproxy"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
)

// fakeAuth hands out "Bearer old" until a 401 makes it "sign in".
type fakeAuth struct {
	mu      sync.Mutex
	token   string
	signins atomic.Int32
	refuse  bool
}

func (a *fakeAuth) Authorization(context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return "Bearer " + a.token, nil
}

func (a *fakeAuth) Unauthorized(_ context.Context, resp *http.Response) error {
	a.signins.Add(1)
	if a.refuse {
		return errors.New("user declined")
	}
	a.mu.Lock()
	a.token = "new"
	a.mu.Unlock()
	return nil
}

// TestAuthorizerRetries401: a 401 hands the response to the Authorizer and
// the same request is sent again with the new credentials, on every method.
func TestAuthorizerRetries401(t *testing.T) {
	url, _ := startDemo(t, server.Options{})
	var refused atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer new" {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		faultproxy.Forward(w, r, url)
	}))
	defer front.Close()
	auth := &fakeAuth{token: "old"}
	d := startDesktop(t, front.URL+"/mcp", func(c *ClientOptions, _ *RelayOptions) { c.Auth = auth })
	d.initialize(nil)
	if got := toolText(t, d.call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "authorized"}})); got != "authorized" {
		t.Errorf("echo = %q", got)
	}
	if n := auth.signins.Load(); n != 1 {
		t.Errorf("sign-ins = %d, want 1", n)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("refused requests = %d, want 1", n)
	}
	d.close() // before front.Close, which waits for the GET stream
	checkExactlyOnce(t, d)
}

// TestAuthorizerDeclines: when the Authorizer cannot get credentials, the
// request gets the server's 401 as a clear error.
func TestAuthorizerDeclines(t *testing.T) {
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer front.Close()
	auth := &fakeAuth{token: "old", refuse: true}
	d := startDesktop(t, front.URL+"/mcp", func(c *ClientOptions, _ *RelayOptions) { c.Auth = auth })
	m := d.await(d.request("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}))
	if m.Error == nil || !strings.Contains(m.Error.Message, "401") {
		t.Fatalf("initialize: %s", m.Raw)
	}
	if n := auth.signins.Load(); n != 1 {
		t.Errorf("sign-in attempts = %d, want 1", n)
	}
	d.close()
}
