package auth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/testpeers"
)

// clientEnv, set, makes the test binary a minimal MCP client that signs in
// with OAuth: the conformance runner's auth scenarios score it.
const clientEnv = "MCPBRIDGE_AUTH_TEST_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		os.Exit(conformanceClient(os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

// conformanceClient initializes, lists tools and calls the first one at
// serverURL, signing in as OAuth does for the bridge.
func conformanceClient(serverURL string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := Options{
		ServerURL:       serverURL,
		Logger:          log,
		Interactive:     true,
		CallbackTimeout: 20 * time.Second,
		OpenBrowser: func(u string) error {
			resp, err := http.Get(u)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		},
	}
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if v := os.Getenv("MCP_CONFORMANCE_CONTEXT"); v != "" {
		_ = json.Unmarshal([]byte(v), &cc)
		opts.ClientID, opts.ClientSecret = cc.ClientID, cc.ClientSecret
	}
	if os.Getenv("MCP_CONFORMANCE_SCENARIO") == "auth/basic-cimd" {
		opts.ClientMetadataURL = "https://conformance-test.local/client-metadata.json"
	}
	a := New(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &miniClient{a: a, url: serverURL}
	steps := []struct {
		method string
		params any
	}{
		{"initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "auth-test", "version": "0"}}},
		{"notifications/initialized", nil},
		{"tools/list", nil},
	}
	for i, s := range steps {
		res, err := c.send(ctx, i, s.method, s.params)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.method, err)
			return 1
		}
		if s.method == "initialize" {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(res, &r)
			c.version = r.ProtocolVersion
		}
		if s.method == "tools/list" {
			var r struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			_ = json.Unmarshal(res, &r)
			for j, t := range r.Tools {
				if _, err := c.send(ctx, 10+j, "tools/call", map[string]any{"name": t.Name, "arguments": map[string]any{}}); err != nil {
					fmt.Fprintf(os.Stderr, "tools/call %s: %v\n", t.Name, err)
					return 1
				}
			}
		}
	}
	return 0
}

type miniClient struct {
	a       Authorizer
	url     string
	version string
	session string
}

func (c *miniClient) send(ctx context.Context, id int, method string, params any) (json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	notify := strings.HasPrefix(method, "notifications/")
	if !notify {
		msg["id"] = id
	}
	body, _ := json.Marshal(msg)
	for range 5 {
		h, err := c.a.Authorization(ctx)
		if err != nil {
			return nil, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		if c.version != "" {
			req.Header.Set("MCP-Protocol-Version", c.version)
		}
		if c.session != "" {
			req.Header.Set("Mcp-Session-Id", c.session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == 401 || resp.StatusCode == 403 {
			resp.Body.Close()
			if err := c.a.Unauthorized(ctx, resp); err != nil {
				return nil, err
			}
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("HTTP %s", resp.Status)
		}
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			c.session = s
		}
		if notify {
			return nil, nil
		}
		return readResult(resp)
	}
	return nil, fmt.Errorf("still unauthorized")
}

func readResult(resp *http.Response) (json.RawMessage, error) {
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(d) != "" {
				data = []byte(d)
				break
			}
		}
	} else {
		data, _ = io.ReadAll(resp.Body)
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("bad response %q", data)
	}
	if m.Error != nil {
		return nil, fmt.Errorf("error: %s", m.Error.Message)
	}
	return m.Result, nil
}

// TestConformanceAuth scores OAuth against the conformance runner's
// auth scenarios (needs Node 22 and the runner: scripts/setup-test-deps.sh).
// Left out on purpose: the 2025-03-26 scenarios. metadata-backcompat serves
// metadata whose issuer is not the URL it was found under (A2 refuses it);
// endpoint-fallback has no metadata at all, so no proof of S256 (A4).
func TestConformanceAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(clientEnv, "1")
	for _, sc := range []string{
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/basic-cimd",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
		"auth/scope-step-up", "auth/scope-retry-limit",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
		"auth/pre-registration", "auth/resource-mismatch",
		"auth/offline-access-scope", "auth/offline-access-not-supported",
	} {
		t.Run(sc, func(t *testing.T) {
			res := testpeers.RunConformanceClient(t, self, sc)
			if !res.Passed {
				t.Errorf("%s failed:\n%s", sc, res.Output)
			}
		})
	}
}
