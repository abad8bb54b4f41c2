package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	return New(filepath.Join(t.TempDir(), "cfg"), nil)
}

func testEndpoint(name string) Endpoint {
	return Endpoint{Name: name, URL: "https://example.com/mcp", Auth: AuthNone}
}

func TestAddListUpdateRemove(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	eps, err := s.Endpoints()
	if err != nil || len(eps) != 0 {
		t.Fatalf("empty store: %v, %v", eps, err)
	}
	a, err := s.Add(ctx, Endpoint{Name: "work", URL: "https://example.com/mcp", Headers: map[string]string{"X-Team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.Auth != AuthNone {
		t.Fatalf("Add did not fill defaults: %+v", a)
	}
	if _, err := s.Add(ctx, testEndpoint("WORK")); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate name (other case): got %v, want ErrExists", err)
	}
	got, err := s.Endpoint("work")
	if err != nil || got.ID != a.ID || got.Headers["X-Team"] != "a" {
		t.Fatalf("Endpoint = %+v, %v", got, err)
	}
	up, err := s.Update(ctx, "work", func(ep *Endpoint) error {
		ep.Name = "job"
		ep.Tools.Deny = []string{"delete_*"}
		return nil
	})
	if err != nil || up.Name != "job" || up.ID != a.ID {
		t.Fatalf("Update = %+v, %v", up, err)
	}
	if _, err := s.Endpoint(a.ID); err != nil {
		t.Fatalf("lookup by id: %v", err)
	}
	if _, err := s.Endpoint("work"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old name still found: %v", err)
	}
	if _, err := s.Update(ctx, "job", func(ep *Endpoint) error { ep.ID = "x"; return nil }); err == nil {
		t.Fatal("Update allowed an id change")
	}
	if _, err := s.Remove(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "job"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestFileFormat(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Add(ctx, testEndpoint("a")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode = %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(s.Path())
	if !strings.HasPrefix(string(data), "{\n  \"version\": 1,\n") {
		t.Errorf("config is not indented or has no version first:\n%s", data)
	}
	if _, err := os.Stat(s.Path() + ".bak"); !os.IsNotExist(err) {
		t.Errorf("backup written for a brand-new file: %v", err)
	}
	if _, err := s.Add(ctx, testEndpoint("b")); err != nil {
		t.Fatal(err)
	}
	bak, err := os.ReadFile(s.Path() + ".bak")
	if err != nil || string(bak) != string(data) {
		t.Errorf("backup does not hold the previous file: %v\n%s", err, bak)
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir(), ".*tmp*"))
	if len(leftovers) != 0 {
		t.Errorf("temp files left: %v", leftovers)
	}
}

func TestBrokenFileIsReportedAndKept(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, content, want string
	}{
		{"syntax", "{\n  \"version\": 1,\n  \"endpoints\": [\n    {\"name\": \"a\",}\n  ]\n}\n", "line 4"},
		{"type", "{\n  \"version\": 1,\n  \"endpoints\": \"no\"\n}\n", "line 3"},
		{"unknown field", "{\"version\": 1, \"endpoints\": [], \"endpionts\": []}", "unknown field \"endpionts\""},
		{"truncated", "{\"version\": 1, \"endpoints\": [", "line 1"},
		{"newer", "{\"version\": 9, \"endpoints\": []}", "upgrade mcpbridge"},
		{"invalid endpoint", `{"version": 1, "endpoints": [{"id": "1", "name": "a", "url": "ftp://x", "auth": "none"}]}`, `endpoint "a": url: scheme must be https or http`},
		{"duplicate", `{"version": 1, "endpoints": [{"id": "1", "name": "a", "url": "https://x", "auth": "none"}, {"id": "2", "name": "A", "url": "https://x", "auth": "none"}]}`, "more than one endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			os.MkdirAll(s.Dir(), 0o700)
			os.WriteFile(s.Path(), []byte(tt.content), 0o600)
			_, err := s.Load()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want it to mention %q", err, tt.want)
			}
			if !errors.Is(err, ErrBrokenConfig) {
				t.Errorf("error does not wrap ErrBrokenConfig: %v", err)
			}
			if _, err := s.Add(ctx, testEndpoint("z")); err == nil {
				t.Fatal("Add succeeded on a broken file")
			}
			data, _ := os.ReadFile(s.Path())
			if string(data) != tt.content {
				t.Fatal("broken file was rewritten")
			}
		})
	}
}

func TestValidation(t *testing.T) {
	base := func() Endpoint {
		return Endpoint{ID: "id", Name: "ok", URL: "https://h/mcp", Auth: AuthNone}
	}
	tests := []struct {
		name string
		mod  func(*Endpoint)
		want string // "" = valid
	}{
		{"ok", func(*Endpoint) {}, ""},
		{"no name", func(e *Endpoint) { e.Name = "" }, "name: is required"},
		{"bad name", func(e *Endpoint) { e.Name = "a b" }, "name: use up to 64"},
		{"no url", func(e *Endpoint) { e.URL = "" }, "url: is required"},
		{"relative url", func(e *Endpoint) { e.URL = "/mcp" }, "not an absolute URL"},
		{"http remote", func(e *Endpoint) { e.URL = "http://h/mcp" }, "use https or set allow_http"},
		{"http allowed", func(e *Endpoint) { e.URL = "http://h/mcp"; e.Options.AllowHTTP = true }, ""},
		{"http loopback", func(e *Endpoint) { e.URL = "http://127.0.0.1:8080/mcp" }, ""},
		{"userinfo", func(e *Endpoint) { e.URL = "https://u:p@h/mcp" }, "must not contain a user"},
		{"auth kind", func(e *Endpoint) { e.Auth = "basic" }, `unknown kind "basic"`},
		{"header name", func(e *Endpoint) { e.Headers = map[string]string{"X Y": "1"} }, "not a valid header name"},
		{"header newline", func(e *Endpoint) { e.Headers = map[string]string{"X": "a\nb"} }, "one line"},
		{"header ref", func(e *Endpoint) { e.Headers = map[string]string{"X": "${1BAD}"} }, "bad environment variable name"},
		{"header unclosed", func(e *Endpoint) { e.Headers = map[string]string{"X": "${A"} }, "unclosed"},
		{"bearer plus authorization", func(e *Endpoint) {
			e.Auth = AuthBearer
			e.Headers = map[string]string{"Authorization": "x"}
		}, "sets Authorization itself"},
		{"ca relative", func(e *Endpoint) { e.Options.CAFile = "ca.pem" }, "absolute path"},
		{"timeout", func(e *Endpoint) { e.Options.RequestTimeout = -1 }, "must not be negative"},
		{"glob", func(e *Endpoint) { e.Tools.Allow = []string{"[a"} }, `bad glob "[a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := base()
			tt.mod(&ep)
			err := ep.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
			if _, ok := UserMessage(err); !ok {
				t.Errorf("validation error is not user-facing: %T", err)
			}
		})
	}
}

func TestToolFilter(t *testing.T) {
	tests := []struct {
		f    ToolFilter
		tool string
		want bool
	}{
		{ToolFilter{}, "anything", true},
		{ToolFilter{Allow: []string{"read_*"}}, "read_file", true},
		{ToolFilter{Allow: []string{"read_*"}}, "write_file", false},
		{ToolFilter{Deny: []string{"*delete*"}}, "bulk_delete_rows", false},
		{ToolFilter{Deny: []string{"*delete*"}}, "list", true},
		{ToolFilter{Allow: []string{"*"}, Deny: []string{"exec"}}, "exec", false},
		{ToolFilter{Allow: []string{"git_?"}}, "git_a", true},
		{ToolFilter{Allow: []string{"git_?"}}, "git_ab", false},
		{ToolFilter{Allow: []string{"ns_*"}}, "ns_a/b", false}, // * does not cross /
		{ToolFilter{Allow: []string{"[a"}}, "[a", false},       // bad pattern never matches
	}
	for _, tt := range tests {
		if got := tt.f.Allowed(tt.tool); got != tt.want {
			t.Errorf("%+v.Allowed(%q) = %v, want %v", tt.f, tt.tool, got, tt.want)
		}
	}
}

// TestConcurrentWriters has many goroutines, each with its own Store (as
// separate processes would), add endpoints at once; none may be lost.
func TestConcurrentWriters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := New(dir, nil)
			_, err := s.Add(context.Background(), testEndpoint(fmt.Sprintf("ep%d", i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	eps, err := New(dir, nil).Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != n {
		t.Fatalf("got %d endpoints, want %d", len(eps), n)
	}
}

// TestConcurrentProcesses re-runs the test binary as several writer
// processes that add and update endpoints on the same file.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := filepath.Join(t.TempDir(), "cfg")
	const procs, each = 4, 10
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
			cmd.Env = append(os.Environ(), "MCPBRIDGE_TEST_WRITER="+dir, "MCPBRIDGE_TEST_WRITER_ID="+strconv.Itoa(p))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer %d: %v\n%s", p, err, out)
			}
		}()
	}
	wg.Wait()
	eps, err := New(dir, nil).Endpoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != procs*each {
		t.Fatalf("got %d endpoints, want %d", len(eps), procs*each)
	}
	for _, ep := range eps {
		if len(ep.Tools.Deny) != 1 {
			t.Errorf("update lost for %s", ep.Name)
		}
	}
}

func TestHelperWriter(t *testing.T) {
	dir := os.Getenv("MCPBRIDGE_TEST_WRITER")
	if dir == "" {
		t.Skip("helper process")
	}
	id := os.Getenv("MCPBRIDGE_TEST_WRITER_ID")
	s := New(dir, nil)
	ctx := context.Background()
	for i := range 10 {
		name := fmt.Sprintf("p%s-%d", id, i)
		if _, err := s.Add(ctx, testEndpoint(name)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(ctx, name, func(ep *Endpoint) error {
			ep.Tools.Deny = []string{"x"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\nef")
	for _, tt := range []struct{ off, line, col int }{{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {7, 3, 2}, {100, 3, 3}} {
		if l, c := lineCol(data, tt.off); l != tt.line || c != tt.col {
			t.Errorf("lineCol(%d) = %d,%d want %d,%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"version":1,"endpoints":[{"id":"1","name":"a","url":"https://h","auth":"none","headers":{"X":"${A}"}}]}`))
	f.Add([]byte(`{"version":1,"endpoints":[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		out, err := cfg.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseConfig(out); err != nil {
			t.Fatalf("re-parse of marshalled config: %v\n%s", err, out)
		}
	})
}
