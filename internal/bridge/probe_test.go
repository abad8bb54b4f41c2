package bridge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
)

func TestProbeDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		opts server.Options
	}{
		{"sse", server.Options{}},
		{"json", server.Options{JSONResponse: true}},
		{"stateless", server.Options{Stateless: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, mgr, stop, err := demo.Start(ctx, "", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			res, err := bridge.Probe(ctx, bridge.ClientOptions{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			if res.ServerName != "mcpbridge-demo" || res.ProtocolVersion == "" || res.Tools < 3 || res.RoundTrip <= 0 {
				t.Errorf("result = %+v", res)
			}
			if !tc.opts.Stateless {
				// The probe ends its session rather than leaving it to expire.
				deadline := time.Now().Add(2 * time.Second)
				for mgr.SessionCount() != 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := mgr.SessionCount(); n != 0 {
					t.Errorf("%d sessions left open", n)
				}
			}
		})
	}
}

func TestProbeErrorsArePlain(t *testing.T) {
	ctx := context.Background()
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer unauthorized.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/mcp"
	closed.Close()

	for _, tc := range []struct {
		url, want string
	}{
		{unauthorized.URL + "/mcp", "wants credentials"},
		{closedURL, "connection refused"},
	} {
		_, err := bridge.Probe(ctx, bridge.ClientOptions{URL: tc.url})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "initialize: ") {
			t.Errorf("%s: err = %v, want it to mention %q", tc.url, err, tc.want)
		}
	}
}
