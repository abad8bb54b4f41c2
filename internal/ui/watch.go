package ui

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// Timing of the status watch; tests shorten them.
var (
	statusDebounce = 150 * time.Millisecond
	// A bridge killed with -9 leaves its file behind without an event;
	// while any bridge is listed the files are re-checked this often so a
	// dead one disappears. Nothing runs when no bridge is listed.
	liveCheckInterval = 15 * time.Second
	// Only if fsnotify cannot be used at all.
	statusPollInterval = 3 * time.Second
)

// watchDirs reports bridge statuses and log changes until ctx is done.
// onStatus gets every running bridge's status once the watch is in place
// and after every change to the status directory; onLog gets the base
// name of a changed file in the log directory. Both run on the watch
// goroutine. The directories are watched, not polled: status files are
// replaced atomically, which would end a watch on the file itself.
func watchDirs(ctx context.Context, statusDir, logDir string, logger *slog.Logger, onStatus func([]store.Status), onLog func(string)) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	for _, d := range []string{statusDir, logDir} {
		if d != "" {
			if err := os.MkdirAll(d, 0o700); err != nil {
				logger.Debug("creating watched dir", "dir", d, "err", err)
			}
		}
	}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		if err = w.Add(statusDir); err == nil && logDir != "" {
			if lerr := w.Add(logDir); lerr != nil {
				logger.Warn("log view will not follow new lines", "dir", logDir, "err", lerr)
			}
		}
	}
	var poll <-chan time.Time
	if err != nil {
		logger.Warn("watching bridge status: falling back to polling", "dir", statusDir, "err", err)
		t := time.NewTicker(statusPollInterval)
		defer t.Stop()
		poll = t.C
	} else {
		events, errs = w.Events, w.Errors
	}

	listed := 0
	read := func() {
		sts, err := store.ReadStatuses(statusDir)
		if err != nil {
			logger.Debug("reading bridge status", "err", err)
			return
		}
		listed = len(sts)
		onStatus(sts)
	}
	read()

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	live := time.NewTicker(liveCheckInterval)
	defer live.Stop()
	pendingLogs := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			switch filepath.Dir(ev.Name) {
			case filepath.Clean(statusDir):
				if filepath.Ext(ev.Name) == ".json" {
					debounce.Reset(statusDebounce)
				}
			case filepath.Clean(logDir):
				if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) {
					pendingLogs[filepath.Base(ev.Name)] = true
					debounce.Reset(statusDebounce)
				}
			}
		case err, ok := <-errs:
			if ok {
				logger.Debug("status watcher", "err", err)
				debounce.Reset(statusDebounce)
			}
		case <-debounce.C:
			read()
			for name := range pendingLogs {
				delete(pendingLogs, name)
				onLog(name)
			}
		case <-poll:
			read()
		case <-live.C:
			if listed > 0 {
				read()
			}
		}
	}
}
