package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs mcpbridge with a private config dir set in the environment.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return cliResult{code, out.String(), errb.String()}
}

func setConfigDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	t.Setenv(store.EnvConfigDir, dir)
	return dir
}

func TestEndpointLifecycle(t *testing.T) {
	dir := setConfigDir(t)
	r := runCLI(t, "", "endpoint", "add", "work", "--url", "https://example.com/mcp",
		"--header", "X-Team: blue", "--header", "X-Api-Key: keyring:api", "--auth", "headers",
		"--allow-tool", "read_*", "--deny-tool", "read_secret", "--request-timeout", "45s")
	if r.code != ExitOK {
		t.Fatalf("add: %d %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "mcpbridge secret set work --key api") {
		t.Errorf("add does not say how to store the secret:\n%s", r.stdout)
	}
	ep, err := store.New(dir, nil).Endpoint("work")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Endpoint{
		ID: ep.ID, Name: "work", URL: "https://example.com/mcp", Auth: store.AuthHeaders,
		Headers: map[string]string{"X-Team": "blue", "X-Api-Key": "keyring:api"},
		Options: store.Options{RequestTimeout: store.Duration(45e9)},
		Tools:   store.ToolFilter{Allow: []string{"read_*"}, Deny: []string{"read_secret"}},
	}
	if !reflect.DeepEqual(ep, want) {
		t.Fatalf("stored endpoint:\n got %+v\nwant %+v", ep, want)
	}

	r = runCLI(t, "", "endpoint", "edit", "work", "--name", "job", "--remove-header", "x-team", "--deny-tool", "", "--allow-http")
	if r.code != ExitOK {
		t.Fatalf("edit: %d %s", r.code, r.stderr)
	}
	ep, _ = store.New(dir, nil).Endpoint("job")
	if ep.Headers["X-Team"] != "" || len(ep.Tools.Deny) != 0 || !ep.Options.AllowHTTP || len(ep.Tools.Allow) != 1 {
		t.Errorf("after edit: %+v", ep)
	}

	r = runCLI(t, "", "endpoint", "show", "job")
	var shown map[string]any
	if r.code != ExitOK || json.Unmarshal([]byte(r.stdout), &shown) != nil || shown["name"] != "job" {
		t.Fatalf("show: %d %q %s", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, "", "endpoint", "remove", "job", "--keep-secrets")
	if r.code != ExitOK {
		t.Fatalf("remove: %d %s", r.code, r.stderr)
	}
	r = runCLI(t, "", "endpoint", "list")
	if r.code != ExitOK || !strings.Contains(r.stdout, "No endpoints") {
		t.Errorf("list after remove: %d %q", r.code, r.stdout)
	}
}

func TestEndpointErrors(t *testing.T) {
	setConfigDir(t)
	if r := runCLI(t, "", "endpoint", "add", "a", "--url", "https://h/mcp"); r.code != ExitOK {
		t.Fatal(r.stderr)
	}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"endpoint"}, ExitUsage, "Usage"},
		{[]string{"endpoint", "frob"}, ExitUsage, `unknown endpoint command "frob"`},
		{[]string{"endpoint", "add", "b"}, ExitUsage, "needs --url"},
		{[]string{"endpoint", "add", "--url", "https://h"}, ExitUsage, "needs a NAME"},
		{[]string{"endpoint", "add", "b", "--url", "http://h.example/mcp"}, ExitUsage, "use https or set allow_http"},
		{[]string{"endpoint", "add", "b", "--url", "https://h", "--header", "nocolon"}, ExitUsage, `want "Name: value"`},
		{[]string{"endpoint", "add", "b", "--url", "https://h", "--bogus"}, ExitUsage, "flag provided but not defined"},
		{[]string{"endpoint", "add", "a", "--url", "https://h"}, ExitError, "already exists"},
		{[]string{"endpoint", "show", "nope"}, ExitError, `No endpoint named "nope"`},
		{[]string{"endpoint", "edit", "a"}, ExitUsage, "nothing to change"},
		{[]string{"endpoint", "edit", "a", "--auth", "kerberos"}, ExitUsage, `unknown kind "kerberos"`},
		{[]string{"endpoint", "remove"}, ExitUsage, "takes one NAME"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("%v: code %d stderr %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
		if tt.code != ExitOK && tt.msg != "Usage" && strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: error is not one line: %q", tt.args, r.stderr)
		}
	}
}

func TestEndpointBrokenConfig(t *testing.T) {
	dir := setConfigDir(t)
	os.MkdirAll(dir, 0o700)
	broken := "{\n  \"version\": 1,\n  \"endpoints\": [,]\n}\n"
	os.WriteFile(filepath.Join(dir, store.ConfigFile), []byte(broken), 0o600)
	r := runCLI(t, "", "endpoint", "add", "b", "--url", "https://h")
	if r.code != ExitError || !strings.Contains(r.stderr, "line 3") {
		t.Fatalf("add on broken file: %d %q", r.code, r.stderr)
	}
	data, _ := os.ReadFile(filepath.Join(dir, store.ConfigFile))
	if string(data) != broken {
		t.Fatal("broken config was rewritten")
	}
}

func TestParseInterspersed(t *testing.T) {
	fs := newFlagSet("t", nil)
	key := fs.String("key", "", "")
	pos, err := parseInterspersed(fs, []string{"a", "--key", "k", "b", "--", "--key"})
	if err != nil || *key != "k" || !reflect.DeepEqual(pos, []string{"a", "b", "--key"}) {
		t.Fatalf("pos=%q key=%q err=%v", pos, *key, err)
	}
}
