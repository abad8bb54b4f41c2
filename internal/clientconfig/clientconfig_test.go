package clientconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallKeepsOtherEntriesAndOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "claude.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	old := `{"zeta": 1, "mcpServers": {"other": {"command": "x"}}, "alpha": [1,2]}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	added, err := Install(path, "work", ServerEntry(Claude, "/bin/mcpbridge", "work", ""))
	if err != nil || !added {
		t.Fatalf("Install = %v, %v", added, err)
	}
	got, _ := os.ReadFile(path)
	s := string(got)
	if !(strings.Index(s, `"zeta"`) < strings.Index(s, `"mcpServers"`) && strings.Index(s, `"mcpServers"`) < strings.Index(s, `"alpha"`)) {
		t.Errorf("key order changed:\n%s", s)
	}
	if !strings.Contains(s, `"other"`) || !strings.Contains(s, `"work"`) {
		t.Errorf("entries missing:\n%s", s)
	}
	if bak, _ := os.ReadFile(path + ".bak"); string(bak) != old {
		t.Errorf("backup = %q", bak)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want the old file's", fi.Mode().Perm())
	}
	added, err = Install(path, "work", ServerEntry(Claude, "/bin/mcpbridge", "work", ""))
	if err != nil || added {
		t.Fatalf("second Install = %v, %v; want an update", added, err)
	}
}

func TestInstallRefusesBrokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, []byte("{nope"), 0o600)
	if _, err := Install(path, "w", ServerEntry(Cursor, "/x", "w", "")); err == nil {
		t.Fatal("no error for a broken file")
	}
	if b, _ := os.ReadFile(path); string(b) != "{nope" {
		t.Errorf("file changed to %q", b)
	}
}

func TestSnippet(t *testing.T) {
	got := string(Snippet(VSCode, "w", ServerEntry(VSCode, "/x", "w", "/cfg")))
	for _, want := range []string{`"servers"`, `"type": "stdio"`, `"MCPBRIDGE_CONFIG_DIR": "/cfg"`, `"run",`} {
		if !strings.Contains(got, want) {
			t.Errorf("snippet lacks %s:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "}\n") {
		t.Errorf("snippet does not end in a newline")
	}
}
