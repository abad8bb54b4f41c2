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
	for _, scenario := range []string{"initialize", "tools_call", "sse-retry"} {
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
