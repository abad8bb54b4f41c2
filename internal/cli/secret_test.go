package cli

import (
	"strings"
	"sync"
	"testing"

	"github.com/zalando/go-keyring"
)

// The CLI tests are about argument handling and wiring, so they use
// go-keyring's in-memory mock; the store package tests the real keyring.
var mockKeyring sync.Once

func useMockKeyring() { mockKeyring.Do(keyring.MockInit) }

func TestSecretSetListDelete(t *testing.T) {
	useMockKeyring()
	setConfigDir(t)
	if r := runCLI(t, "", "endpoint", "add", "w", "--url", "https://h/mcp", "--auth", "bearer"); r.code != ExitOK {
		t.Fatal(r.stderr)
	}
	r := runCLI(t, "", "endpoint", "list")
	if !strings.Contains(r.stdout, "missing token") {
		t.Errorf("list before set:\n%s", r.stdout)
	}
	const value = "sk-very-secret-value"
	r = runCLI(t, value+"\n", "secret", "set", "w")
	if r.code != ExitOK {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	if v, err := keyring.Get("mcpbridge", idOf(t, "w")+"/token"); err != nil || v != value {
		t.Fatalf("stored %q, %v; want the value without its newline", v, err)
	}
	for _, args := range [][]string{{"endpoint", "list"}, {"endpoint", "show", "w"}} {
		r = runCLI(t, "", args...)
		if !strings.Contains(r.stdout, "stored") || strings.Contains(r.stdout+r.stderr, value) {
			t.Errorf("%v must say stored and never show the value:\n%s", args, r.stdout)
		}
	}
	r = runCLI(t, "", "secret", "delete", "w")
	if r.code != ExitOK {
		t.Fatalf("delete: %d %s", r.code, r.stderr)
	}
	r = runCLI(t, "", "secret", "delete", "w")
	if r.code != ExitError || !strings.Contains(r.stderr, "no secret") {
		t.Errorf("second delete: %d %q", r.code, r.stderr)
	}
}

func TestSecretUsage(t *testing.T) {
	useMockKeyring()
	setConfigDir(t)
	runCLI(t, "", "endpoint", "add", "h", "--url", "https://h/mcp", "--auth", "headers",
		"--header", "A: keyring:one", "--header", "B: x ${keyring:two}")
	tests := []struct {
		stdin string
		args  []string
		code  int
		msg   string
	}{
		{"", []string{"secret", "set", "h", "hunter2"}, ExitUsage, "never from the command line"},
		{"", []string{"secret", "set"}, ExitUsage, "needs an endpoint NAME"},
		{"v", []string{"secret", "set", "h"}, ExitUsage, "uses 2 keyring secrets; say which with --key"},
		{"", []string{"secret", "set", "h", "--key", "one"}, ExitError, "empty secret"},
		{"v", []string{"secret", "set", "nope"}, ExitError, `No endpoint named "nope"`},
		{"v", []string{"secret", "frob"}, ExitUsage, "unknown secret command"},
		{"v", []string{"secret", "set", "h", "--key", "bad name"}, ExitError, "Bad secret name"},
	}
	for _, tt := range tests {
		r := runCLI(t, tt.stdin, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("%v: %d %q; want %d %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
	if r := runCLI(t, "v1", "secret", "set", "h", "--key", "two"); r.code != ExitOK {
		t.Fatal(r.stderr)
	}
	r := runCLI(t, "v", "secret", "set", "h", "--key", "other")
	if r.code != ExitOK || !strings.Contains(r.stderr, `does not use secret "other"`) {
		t.Errorf("unused key: %d %q", r.code, r.stderr)
	}
}

func idOf(t *testing.T, name string) string {
	t.Helper()
	st, err := openStore(&Env{})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := st.Endpoint(name)
	if err != nil {
		t.Fatal(err)
	}
	return ep.ID
}
