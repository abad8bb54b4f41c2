package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/bridge/stdio"
	"github.com/mcpbridge/mcpbridge/internal/jsonrpc"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

// TestNamedEndpointTokenRotation: a running bridge for a bearer endpoint
// sends a new token from the keyring on the next request after it changes,
// on the same session.
func TestNamedEndpointTokenRotation(t *testing.T) {
	useMockKeyring()
	dir := t.TempDir()
	t.Setenv(store.EnvConfigDir, dir)
	t.Setenv(store.EnvStateDir, filepath.Join(dir, "state"))

	type seen struct{ auth, session string }
	var mu sync.Mutex
	var log []seen
	mgr, err := server.New(demo.New(nil), server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go mgr.Run(ctx)
	<-mgr.Ready()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			log = append(log, seen{r.Header.Get("Authorization"), r.Header.Get("Mcp-Session-Id")})
			mu.Unlock()
		}
		mgr.ServeHTTP(w, r)
	}))
	defer srv.Close()

	st, err := store.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := st.Add(ctx, store.Endpoint{Name: "rot", URL: srv.URL + "/mcp", Auth: store.AuthBearer})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetSecret(ctx, ep.ID, store.SecretToken, "token-one"); err != nil {
		t.Fatal(err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "rot"}, inR, outW, io.Discard)
		outW.Close()
	}()
	w := stdio.NewWriter(inW)
	r := stdio.NewReader(outR, 0)
	call := func(id int, method, params string) *jsonrpc.Message {
		t.Helper()
		w.Write([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)))
		for {
			line, err := r.ReadLine()
			if err != nil {
				t.Fatalf("reading the bridge: %v", err)
			}
			m, err := jsonrpc.Parse(line)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind() == jsonrpc.KindResponse && m.IDKey() == fmt.Sprint(id) {
				if m.Error != nil {
					t.Fatalf("%s: %s", method, m.Raw)
				}
				return m
			}
		}
	}
	call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	call(2, "tools/call", `{"name":"echo","arguments":{"message":"a"}}`)
	if err := st.SetSecret(ctx, ep.ID, store.SecretToken, "token-two"); err != nil {
		t.Fatal(err)
	}
	call(3, "tools/call", `{"name":"echo","arguments":{"message":"b"}}`)

	mu.Lock()
	first, last := log[0], log[len(log)-1]
	mu.Unlock()
	if first.auth != "Bearer token-one" || last.auth != "Bearer token-two" {
		t.Errorf("Authorization went from %q to %q; want token-one then token-two", first.auth, last.auth)
	}
	mu.Lock()
	sessions := map[string]bool{}
	for _, s := range log[1:] {
		sessions[s.session] = true
	}
	mu.Unlock()
	if len(sessions) != 1 {
		t.Errorf("the session changed with the token: %v", sessions)
	}
	if mgr.SessionCount() != 1 {
		t.Errorf("sessions = %d", mgr.SessionCount())
	}
	inW.Close()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit code %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bridge did not exit after stdin EOF")
	}
}
