package testpeers

import (
	"bufio"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// peer is a started peer process whose output goes to t.Log.
type peer struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and its output is drained
	err    error         // Wait's result, valid after exited is closed
}

// startPeer starts cmd in its own process group, streams its stdout and
// stderr to t.Log line by line with name as prefix, and stops the whole group
// at cleanup (SIGTERM, then SIGKILL after a grace period).
func startPeer(t testing.TB, name string, cmd *exec.Cmd) *peer {
	t.Helper()
	ownGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &peer{cmd: cmd, exited: make(chan struct{})}
	var wg sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logLines(t, name, r)
		}()
	}
	go func() {
		wg.Wait() // Wait must not run before the pipes are drained
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t, name) })
	return p
}

func (p *peer) stop(t testing.TB, name string) {
	select {
	case <-p.exited:
		return
	default:
	}
	terminateGroup(p.cmd)
	select {
	case <-p.exited:
		return
	case <-time.After(3 * time.Second):
	}
	killGroup(p.cmd)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("%s (pid %d) did not exit after SIGKILL", name, p.cmd.Process.Pid)
	}
}

// logLines copies r to t.Log, one call per line, without a line length cap.
func logLines(t testing.TB, name string, r io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			t.Logf("%s: %s", name, line)
		}
		if err != nil {
			return
		}
	}
}
