package auth

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// OpenURL opens u in the user's browser: with $BROWSER if set (run as
// `$BROWSER u`), else the desktop's opener (xdg-open, open, or
// rundll32 url.dll on Windows). The child's stdin, stdout and stderr are
// the null device, so nothing reaches the bridge's protocol stream; it is
// not waited for beyond being started (log receives its exit error).
func OpenURL(u string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var name string
	var args []string
	if b := strings.TrimSpace(os.Getenv("BROWSER")); b != "" {
		if _, err := os.Stat(b); err == nil {
			name = b // a path, possibly with spaces
		} else {
			f := strings.Fields(b)
			name, args = f[0], f[1:]
		}
	} else {
		switch runtime.GOOS {
		case "windows":
			name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
		case "darwin":
			name = "open"
		default:
			name = "xdg-open"
		}
	}
	if strings.HasPrefix(u, "-") {
		return errors.New("refusing to open a URL that looks like an option")
	}
	cmd := exec.Command(name, append(args, u)...)
	// Stdin, Stdout and Stderr stay nil: the null device.
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		if err := cmd.Wait(); err != nil {
			log.Debug("oauth: browser command failed", "cmd", name, "err", err)
		}
	}()
	return nil
}
