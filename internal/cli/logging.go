package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// newLogger builds the logger for a command: text to stderr and, if asked,
// to a file (appended, mode 0600). stdout is never a log sink: in stdio mode
// it carries protocol only.
func newLogger(stderr io.Writer, level, file string) (*slog.Logger, func(), error) {
	var lv slog.Level
	switch strings.ToLower(level) {
	case "", "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, nil, fmt.Errorf("invalid --log-level %q (debug, info, warn or error)", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	h := slog.Handler(slog.NewTextHandler(stderr, opts))
	closeFn := func() {}
	if file != "" {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("opening log file: %w", err)
		}
		h = slog.NewMultiHandler(h, slog.NewTextHandler(f, opts))
		closeFn = func() { f.Close() }
	}
	return slog.New(h), closeFn, nil
}
