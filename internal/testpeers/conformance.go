package testpeers

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BuildBridge builds the headless mcpbridge binary (./cmd/mcpbridge with
// -tags nogui) into a temporary directory and returns its path.
func BuildBridge(t testing.TB) string {
	t.Helper()
	return GoBuild(t, "./cmd/mcpbridge")
}

// BuildDriver builds the conformance stdio driver
// (./internal/testpeers/confdriver) and returns its path.
func BuildDriver(t testing.TB) string {
	t.Helper()
	return GoBuild(t, "./internal/testpeers/confdriver")
}

// DriverCommand returns the --command string for the conformance runner that
// has driver play the desktop client in front of bridge. The runner splits
// the string on spaces and appends the server URL, so no path may contain a
// space.
func DriverCommand(t testing.TB, driver, bridge string, driverArgs ...string) string {
	t.Helper()
	parts := append([]string{driver, "-bridge", bridge}, driverArgs...)
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t\n'\"$`\\;&|<>()*?[]#~") {
			t.Fatalf("conformance runner cannot pass %q through its command line (it splits on spaces and runs a shell)", p)
		}
	}
	return strings.Join(parts, " ")
}

// ConformanceResult is the outcome of one conformance client scenario.
type ConformanceResult struct {
	Output string // the runner's stdout and stderr, interleaved, colours off
	Passed bool   // the runner printed "OVERALL: PASSED" and exited 0
}

// RunConformanceClient runs `conformance client --command command --scenario
// scenario` under Node 22 and returns what it printed. extraArgs go after
// the scenario (e.g. "--timeout", "20000"). Missing peers skip or fail t as
// Unavailable does.
func RunConformanceClient(t testing.TB, command, scenario string, extraArgs ...string) ConformanceResult {
	t.Helper()
	args := append([]string{"client", "--command", command, "--scenario", scenario}, extraArgs...)
	cmd := ConformanceCmd(t, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the conformance runner: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		killGroup(cmd)
		err = <-done
		out.WriteString("\n[testpeers: the conformance runner did not finish within 2 minutes; killed]\n")
	}
	res := ConformanceResult{Output: stripANSI(out.String())}
	res.Passed = err == nil && strings.Contains(res.Output, "OVERALL: PASSED")
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running the conformance runner: %v", err)
	}
	return res
}

// stripANSI removes terminal colour sequences (ESC [ ... letter).
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
