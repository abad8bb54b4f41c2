package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ErrRunning means another tray app already serves the socket; it was
// asked to show its window.
var ErrRunning = errors.New("the mcpbridge tray is already running")

// instanceDialTimeout bounds talking to a running instance; a stuck one
// must not stop this one from starting.
const instanceDialTimeout = 2 * time.Second

// Instance makes the tray a single instance per user: the first one
// listens on a unix socket in the runtime dir, a second start connects,
// asks it to show its window and exits. A socket (not a lock file alone)
// because the second start needs to talk to the first.
type Instance struct {
	ln  net.Listener
	log *slog.Logger
}

// ClaimInstance becomes the tray instance for socket path, or returns
// ErrRunning after asking the running one to show itself. A socket left
// by a crashed instance is replaced.
func ClaimInstance(path string, log *slog.Logger) (*Instance, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating runtime dir: %w", err)
	}
	for attempt := 0; attempt < 2; attempt++ {
		ln, err := net.Listen("unix", path)
		if err == nil {
			return &Instance{ln: ln, log: log}, nil
		}
		if askShow(path) == nil {
			return nil, ErrRunning
		}
		// Nobody answers: a stale socket from a crash. Replace it once.
		log.Debug("replacing stale tray socket", "path", path, "err", err)
		os.Remove(path)
	}
	return nil, fmt.Errorf("cannot listen on %s", path)
}

// askShow asks the instance on path to show its window.
func askShow(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), instanceDialTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(instanceDialTimeout))
	if _, err := c.Write([]byte("show\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ok\n" {
		return fmt.Errorf("unexpected answer %q", line)
	}
	return nil
}

// Serve calls show for every "show" request until Close. It returns at
// once; show runs on the serving goroutine.
func (in *Instance) Serve(show func()) {
	go func() {
		for {
			c, err := in.ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					in.log.Warn("tray socket", "err", err)
				}
				return
			}
			go in.handle(c, show)
		}
	}()
}

func (in *Instance) handle(c net.Conn, show func()) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(instanceDialTimeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "show\n" {
		return
	}
	in.log.Info("another start asked to show the window")
	show()
	c.Write([]byte("ok\n"))
}

// Close stops listening and removes the socket.
func (in *Instance) Close() error {
	return in.ln.Close()
}
