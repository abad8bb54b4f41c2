package testpeers

import (
	"os/exec"
	"strings"
	"testing"
)

// TestConformanceClient scores the real mcpbridge binary as an MCP client
// with the conformance runner: the driver plays the desktop client on the
// bridge's stdio, the runner's test server sits behind the bridge's URL.
func TestConformanceClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs Node")
	}
	ConformanceScript(t) // skip or fail early when the peers are missing
	NodePath(t)
	bridge := BuildBridge(t)
	driver := BuildDriver(t)
	command := DriverCommand(t, driver, bridge)
	scenarios := []string{"initialize", "tools_call", "sse-retry",
		// OAuth through the bridge (the driver plays the browser). Left out:
		// the 2025-03-26 scenarios metadata-backcompat (its metadata's issuer
		// is not where it was found, which rule A2 refuses) and
		// endpoint-fallback (no metadata, so no proof of S256, rule A4).
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/basic-cimd",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
		"auth/scope-step-up", "auth/scope-retry-limit",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
		"auth/pre-registration", "auth/resource-mismatch",
		"auth/offline-access-scope", "auth/offline-access-not-supported",
	}
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			res := RunConformanceClient(t, command, scenario)
			if !res.Passed {
				t.Fatalf("conformance client scenario %s did not pass; runner output:\n%s", scenario, res.Output)
			}
			t.Logf("scenario %s: %s", scenario, lastLines(res.Output, 3))
		})
	}
}

// TestBridgeAgainstEverything drives the real mcpbridge in front of
// server-everything: tools with arguments, progress, a sampling request and
// an elicitation request the server sends back through the bridge.
func TestBridgeAgainstEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs Node")
	}
	url := Everything(t)
	bridge := BuildBridge(t)
	driver := BuildDriver(t)
	cmd := exec.Command(driver,
		"-bridge", bridge,
		"-scenario", "everything",
		"-call", `echo={"message":"hello through the bridge"}`,
		"-call", `get-sum={"a":2,"b":40}`,
		"-call", `trigger-long-running-operation={"duration":1,"steps":2}`,
		"-call", "trigger-sampling-request",
		"-call", "trigger-elicitation-request",
		url)
	out, err := cmd.CombinedOutput()
	t.Logf("driver output:\n%s", out)
	if err != nil {
		t.Fatalf("driver: %v", err)
	}
	for _, want := range []string{
		"hello through the bridge",
		"42",
		"Long running operation completed",
		"notification notifications/progress",
		"server request sampling/createMessage",
		"server request elicitation/create",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("driver output lacks %q", want)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
