package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeExecutable(t *testing.T, path string) {
	t.Helper()
	old := executable
	executable = func() (string, error) { return path, nil }
	t.Cleanup(func() { executable = old })
}

func TestConfigSnippet(t *testing.T) {
	dir := setConfigDir(t)
	fakeExecutable(t, "/opt/mcpbridge/bin/mcpbridge")
	runCLI(t, "", "endpoint", "add", "work", "--url", "https://h/mcp")
	env := `,
      "env": {
        "MCPBRIDGE_CONFIG_DIR": "` + dir + `"
      }`
	want := map[string]string{
		"claude": `{
  "mcpServers": {
    "work": {
      "args": [
        "run",
        "work"
      ],
      "command": "/opt/mcpbridge/bin/mcpbridge"` + env + `
    }
  }
}
`,
		"vscode": `{
  "servers": {
    "work": {
      "args": [
        "run",
        "work"
      ],
      "command": "/opt/mcpbridge/bin/mcpbridge"` + env + `,
      "type": "stdio"
    }
  }
}
`,
	}
	want["cursor"] = want["claude"]
	for client, w := range want {
		r := runCLI(t, "", "config", "snippet", "work", "--client", client)
		if r.code != ExitOK || r.stdout != w {
			t.Errorf("%s: %d %s\n got:\n%s\nwant:\n%s", client, r.code, r.stderr, r.stdout, w)
		}
	}
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"config", "snippet", "work"}, ExitUsage, "needs --client"},
		{[]string{"config", "snippet", "work", "--client", "emacs"}, ExitUsage, `unknown --client "emacs"`},
		{[]string{"config", "snippet", "--client", "claude"}, ExitUsage, "takes one endpoint NAME"},
		{[]string{"config", "snippet", "nope", "--client", "claude"}, ExitError, "No endpoint"},
	} {
		r := runCLI(t, "", tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("%v: %d %q", tt.args, r.code, r.stderr)
		}
	}
}

func TestConfigInstallMerges(t *testing.T) {
	setConfigDir(t)
	fakeExecutable(t, "/usr/bin/mcpbridge")
	runCLI(t, "", "endpoint", "add", "work", "--url", "https://h/mcp")
	file := filepath.Join(t.TempDir(), "Claude", "claude_desktop_config.json")
	os.MkdirAll(filepath.Dir(file), 0o700)
	orig := `{
  "zeta": {"keep": [1, 2, {"deep": true}]},
  "mcpServers": {
    "other": {"command": "npx", "args": ["-y", "thing"], "env": {"K": "v"}, "futureField": 7},
    "work": {"command": "old"}
  },
  "alpha": 1.50
}
`
	os.WriteFile(file, []byte(orig), 0o644)
	r := runCLI(t, "", "config", "install", "work", "--client", "claude", "--file", file)
	if r.code != ExitOK || !strings.Contains(r.stdout, "Updated work") {
		t.Fatalf("install: %d %q %q", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(file)
	if bak, _ := os.ReadFile(file + ".bak"); string(bak) != orig {
		t.Errorf("backup differs from the original:\n%s", bak)
	}
	// Key order and untouched values stay as they were.
	s := string(got)
	if !(strings.Index(s, `"zeta"`) < strings.Index(s, `"mcpServers"`) && strings.Index(s, `"mcpServers"`) < strings.Index(s, `"alpha"`)) ||
		!strings.Contains(s, "1.50") || strings.Index(s, `"other"`) > strings.Index(s, `"work"`) {
		t.Errorf("order or values changed:\n%s", s)
	}
	var doc struct {
		Zeta       json.RawMessage
		Alpha      json.RawMessage
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.MCPServers["other"]["futureField"] != 7.0 || doc.MCPServers["other"]["command"] != "npx" {
		t.Errorf("other entry changed: %v", doc.MCPServers["other"])
	}
	w := doc.MCPServers["work"]
	if w["command"] != "/usr/bin/mcpbridge" || len(w["args"].([]any)) != 2 {
		t.Errorf("work entry: %v", w)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode changed to %v", fi.Mode().Perm())
	}

	// A missing file is created; a broken one is refused and left alone.
	fresh := filepath.Join(t.TempDir(), "new", "c.json")
	if r := runCLI(t, "", "config", "install", "work", "--client", "claude", "--file", fresh); r.code != ExitOK || !strings.Contains(r.stdout, "Added") {
		t.Fatalf("fresh install: %d %q", r.code, r.stderr)
	}
	broken := filepath.Join(t.TempDir(), "b.json")
	os.WriteFile(broken, []byte(`{"mcpServers": {`), 0o600)
	r = runCLI(t, "", "config", "install", "work", "--client", "claude", "--file", broken)
	if r.code != ExitError || !strings.Contains(r.stderr, "not valid JSON") {
		t.Errorf("broken file: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(broken); string(b) != `{"mcpServers": {` {
		t.Error("broken file was changed")
	}
	if _, err := os.Stat(broken + ".bak"); err == nil {
		t.Error("backup written for a refused file")
	}
	notObj := filepath.Join(t.TempDir(), "n.json")
	os.WriteFile(notObj, []byte(`{"mcpServers": []}`), 0o600)
	if r := runCLI(t, "", "config", "install", "work", "--client", "claude", "--file", notObj); r.code != ExitError {
		t.Errorf("mcpServers array: %d %q", r.code, r.stderr)
	}
}
