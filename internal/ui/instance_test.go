package ui

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
)

func TestSecondInstanceShowsTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tray.sock")
	first, err := ClaimInstance(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := make(chan struct{}, 1)
	first.Serve(func() { shown <- struct{}{} })

	if _, err := ClaimInstance(path, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("second claim: %v, want ErrRunning", err)
	}
	select {
	case <-shown:
	default:
		t.Fatal("the first instance was not asked to show its window")
	}
	first.Close()

	again, err := ClaimInstance(path, nil)
	if err != nil {
		t.Fatalf("claim after the first quit: %v", err)
	}
	again.Close()
}

func TestStaleSocketIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tray.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a crashed instance: the file stays, nobody listens
	in, err := ClaimInstance(path, nil)
	if err != nil {
		t.Fatalf("claim over a stale socket: %v", err)
	}
	in.Close()
}
