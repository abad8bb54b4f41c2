package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Timing of config watching; tests shorten them.
var (
	watchDebounce = 100 * time.Millisecond
	pollInterval  = 2 * time.Second
	forcePolling  = false // tests: behave as if fsnotify failed
)

// Watch calls onChange with the parsed config once the watch is in place
// and then every time the file's content changes, until ctx is done; it
// returns nil then. A broken file is reported as (nil, err) once per
// distinct content; empty or missing files are skipped because editors
// and atomic savers pass through those states on every save.
//
// It watches the directory, not the file: an atomic save renames a new
// file over the old one, which would silently end a watch on the file
// itself. Events are debounced (~100 ms) so a burst of writes gives one
// read. If fsnotify cannot be used (inotify limits, odd filesystems) it
// polls every 2 s instead. onChange runs on the watch goroutine; it must
// not block for long.
func (s *Store) Watch(ctx context.Context, onChange func(*Config, error)) error {
	var last []byte
	first := true
	check := func() {
		data, err := os.ReadFile(s.Path())
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			s.logger.Debug("config watch: read failed", "err", err)
			return
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if first && err != nil {
				// No file yet: report the empty config once so callers
				// start from a known state.
				first = false
				onChange(&Config{Version: CurrentVersion}, nil)
			}
			return
		}
		if !first && bytes.Equal(data, last) {
			return
		}
		first = false
		last = data
		cfg, err := ParseConfig(data)
		if err != nil {
			err = fmt.Errorf("%s: %w", s.Path(), err)
			s.logger.Warn("config watch: config is broken, keeping the previous one", "err", err)
			onChange(nil, err)
			return
		}
		onChange(cfg, nil)
	}

	var events <-chan fsnotify.Event
	var watchErrs <-chan error
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.logger.Debug("config watch: creating dir", "err", err)
	}
	if !forcePolling {
		w, err := fsnotify.NewWatcher()
		if err == nil {
			if err = w.Add(s.dir); err != nil {
				w.Close()
			}
		}
		if err != nil {
			s.logger.Warn("config watch: falling back to polling", "dir", s.dir, "err", err)
		} else {
			defer w.Close()
			events, watchErrs = w.Events, w.Errors
		}
	}
	var poll <-chan time.Time
	if events == nil {
		t := time.NewTicker(pollInterval)
		defer t.Stop()
		poll = t.C
	}

	// Read only after the watch is installed, so a change between the
	// caller's own read and now is not lost.
	check()

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events, watchErrs = nil, nil
				t := time.NewTicker(pollInterval)
				defer t.Stop()
				poll = t.C
				continue
			}
			if filepath.Base(ev.Name) == ConfigFile {
				debounce.Reset(watchDebounce)
			}
		case err, ok := <-watchErrs:
			if ok {
				// Typically an event queue overflow: re-read to be safe.
				s.logger.Debug("config watch: watcher error", "err", err)
				debounce.Reset(watchDebounce)
			}
		case <-debounce.C:
			check()
		case <-poll:
			check()
		}
	}
}

// WatchEndpoint is Watch narrowed to one endpoint: onChange gets the
// endpoint named name once the watch is in place, then again whenever it
// changes (it is followed by id, so a rename is a change, not a removal).
// If it is removed, onChange gets an error wrapping ErrNotFound; if the
// file breaks, an error wrapping ErrBrokenConfig, and the caller should
// keep using the endpoint it has. It blocks until ctx is done.
func (s *Store) WatchEndpoint(ctx context.Context, name string, onChange func(Endpoint, error)) error {
	var (
		id      string    // followed once found, so renames are changes
		last    *Endpoint // last endpoint delivered; nil after an error
		missing bool      // the last delivery was "not found"
	)
	return s.Watch(ctx, func(cfg *Config, err error) {
		if err != nil {
			last, missing = nil, false
			onChange(Endpoint{}, err)
			return
		}
		key := name
		if id != "" {
			key = id
		}
		ep, ok := cfg.Find(key)
		if !ok {
			if !missing {
				last, missing = nil, true
				onChange(Endpoint{}, notFound(name))
			}
			return
		}
		id, missing = ep.ID, false
		if last != nil && reflect.DeepEqual(*last, ep) {
			return
		}
		last = &ep
		onChange(ep, nil)
	})
}
