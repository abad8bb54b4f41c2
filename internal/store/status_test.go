package store

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func readStatusFile(t *testing.T, path string) Status {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStatusPublisher(t *testing.T) {
	statusInterval = 100 * time.Millisecond
	t.Cleanup(func() { statusInterval = time.Second })
	dir := filepath.Join(t.TempDir(), "status")
	p := NewStatusPublisher(dir, "my work", nil)

	st := readStatusFile(t, p.Path()) // written at once
	if st.Endpoint != "my work" || st.PID != os.Getpid() || st.State != StateConnecting {
		t.Fatalf("initial status %+v", st)
	}
	if fi, _ := os.Stat(p.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}

	// A burst of updates is written once, with the final values.
	p.SetState(StateConnected)
	p.SetSession(true)
	for range 50 {
		p.RequestRelayed()
	}
	p.Error(&UserError{Msg: "Server said 401; the token was refused.", Err: errors.New("http 401 token=abc")})
	p.SetState(StateIdle)
	before, _ := os.Stat(p.Path())
	time.Sleep(30 * time.Millisecond)
	if mid, _ := os.Stat(p.Path()); !mid.ModTime().Equal(before.ModTime()) {
		t.Error("status written again sooner than the interval")
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		st = readStatusFile(t, p.Path())
		if st.Requests == 50 && st.State == StateIdle || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Requests != 50 || st.Errors != 1 || !st.Session || st.State != StateIdle ||
		st.LastError != "Server said 401; the token was refused." || st.LastActivity.IsZero() {
		t.Fatalf("final status %+v", st)
	}

	got, err := ReadStatuses(dir)
	if err != nil || len(got) != 1 || got[0].Endpoint != "my work" {
		t.Fatalf("ReadStatuses = %+v, %v", got, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p.Close() // twice is fine
	p.RequestRelayed()
	if _, err := os.Stat(p.Path()); !os.IsNotExist(err) {
		t.Fatalf("status file still there after Close: %v", err)
	}
}

func TestReadStatusesDropsStale(t *testing.T) {
	dir := t.TempDir()
	// A pid that surely exited: a child we waited for.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	write := func(pid int, name string) string {
		b, _ := json.Marshal(Status{Endpoint: name, PID: pid, State: StateIdle})
		path := filepath.Join(dir, strconv.Itoa(pid)+"-"+name+".json")
		os.WriteFile(path, b, 0o600)
		return path
	}
	stale := write(dead, "crashed")
	write(os.Getpid(), "alive")
	os.WriteFile(filepath.Join(dir, "junk.json"), []byte("not json"), 0o600)
	os.WriteFile(filepath.Join(dir, ".1-x.json.tmp123"), []byte("{}"), 0o600)

	got, err := ReadStatuses(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Endpoint != "alive" {
		t.Fatalf("ReadStatuses = %+v", got)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale status file not removed")
	}
	if got, err := ReadStatuses(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Errorf("missing dir: %v %v", got, err)
	}
}

func TestDefaultStateDir(t *testing.T) {
	t.Setenv(EnvStateDir, "")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if d, _ := DefaultStateDir(); d != filepath.Join("/run/user/1000", "mcpbridge", "status") {
		t.Errorf("runtime dir: %s", d)
	}
	t.Setenv(EnvStateDir, "/x")
	if d, _ := DefaultStateDir(); d != "/x" {
		t.Errorf("override: %s", d)
	}
}
