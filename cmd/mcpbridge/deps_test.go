package main

import (
	"os/exec"
	"strings"
	"testing"
)

// deps lists the packages linked into mcpbridge built with tags.
func deps(t *testing.T, tags string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, ".")
	// The static binary is built without cgo; the desktop one needs it
	// (listing needs no compiler, so this also works where tests run
	// with CGO_ENABLED=0).
	cgo := "CGO_ENABLED=1"
	if tags == "nogui" {
		cgo = "CGO_ENABLED=0"
	}
	cmd.Env = append(cmd.Environ(), cgo)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestHeadlessBuildHasNoGUI keeps the -tags nogui binary static and small:
// no Fyne, no cgo GUI stack may creep in through an import.
func TestHeadlessBuildHasNoGUI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, p := range deps(t, "nogui") {
		if strings.HasPrefix(p, "fyne.io/") || strings.HasPrefix(p, "github.com/go-gl/") ||
			strings.HasPrefix(p, "github.com/mcpbridge/mcpbridge/internal/ui") {
			t.Errorf("the nogui build links %s", p)
		}
	}
}

// TestDefaultBuildHasTheTray guards the other way: the desktop build must
// not lose the tray to a misplaced build tag.
func TestDefaultBuildHasTheTray(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	want := "github.com/mcpbridge/mcpbridge/internal/ui/trayapp"
	for _, p := range deps(t, "") {
		if p == want {
			return
		}
	}
	t.Errorf("the default build does not link %s", want)
}
