package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type watchEvent struct {
	ep  Endpoint
	err error
}

// startWatch runs WatchEndpoint for name and returns its events.
func startWatch(t *testing.T, s *Store, name string) <-chan watchEvent {
	t.Helper()
	oldDebounce := watchDebounce
	watchDebounce = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan watchEvent, 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchEndpoint(ctx, name, func(ep Endpoint, err error) { ch <- watchEvent{ep, err} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		watchDebounce = oldDebounce
	})
	return ch
}

func next(t *testing.T, ch <-chan watchEvent) watchEvent {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
	return watchEvent{}
}

func quiet(t *testing.T, ch <-chan watchEvent) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

// rewrite returns the config file content with the endpoint's URL changed.
func withURL(t *testing.T, s *Store, url string) []byte {
	t.Helper()
	cfg, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoints[0].URL = url
	b, _ := cfg.Marshal()
	return b
}

func TestWatchEndpoint(t *testing.T) {
	ctx := context.Background()
	saves := map[string]func(t *testing.T, path string, data []byte){
		"store save": nil, // Store.Update: temp file + rename
		"in place": func(t *testing.T, path string, data []byte) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(data[:10]) // a torn moment the debounce should hide
			time.Sleep(2 * time.Millisecond)
			f.Write(data[10:])
			f.Close()
		},
		"editor temp and rename": func(t *testing.T, path string, data []byte) {
			tmp := filepath.Join(filepath.Dir(path), ".config.json.swp")
			os.WriteFile(tmp, data, 0o600)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
		"vim backup dance": func(t *testing.T, path string, data []byte) {
			// vim with backupcopy=no: rename the original to config.json~,
			// write a new file, delete the backup.
			if err := os.Rename(path, path+"~"); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, nil, 0o600) // created empty first
			os.WriteFile(path, data, 0o600)
			os.Remove(path + "~")
		},
	}
	for name, save := range saves {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t)
			ep, err := s.Add(ctx, testEndpoint("w"))
			if err != nil {
				t.Fatal(err)
			}
			ch := startWatch(t, s, "w")
			if ev := next(t, ch); ev.err != nil || ev.ep.ID != ep.ID {
				t.Fatalf("first event %+v", ev)
			}
			if save == nil {
				s.Update(ctx, "w", func(e *Endpoint) error { e.URL = "https://new.example/mcp"; return nil })
			} else {
				save(t, s.Path(), withURL(t, s, "https://new.example/mcp"))
			}
			ev := next(t, ch)
			if ev.err != nil || ev.ep.URL != "https://new.example/mcp" {
				t.Fatalf("after save: %+v", ev)
			}
			quiet(t, ch)
		})
	}
}

func TestWatchEndpointChangesAndErrors(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	s.Add(ctx, testEndpoint("w"))
	s.Add(ctx, testEndpoint("other"))
	ch := startWatch(t, s, "w")
	next(t, ch)

	// Another endpoint changing is not this endpoint's business.
	s.Update(ctx, "other", func(e *Endpoint) error { e.URL = "https://x.example"; return nil })
	quiet(t, ch)

	// Touching the file with identical bytes is no change.
	data, _ := os.ReadFile(s.Path())
	os.WriteFile(s.Path(), data, 0o600)
	quiet(t, ch)

	// A rename is followed by id.
	s.Update(ctx, "w", func(e *Endpoint) error { e.Name = "w2"; return nil })
	if ev := next(t, ch); ev.err != nil || ev.ep.Name != "w2" {
		t.Fatalf("rename: %+v", ev)
	}

	// A broken file is reported once and the next good save recovers.
	os.WriteFile(s.Path(), []byte("{\"version\": 1,\n oops"), 0o600)
	if ev := next(t, ch); !errors.Is(ev.err, ErrBrokenConfig) {
		t.Fatalf("broken: %+v", ev)
	}
	os.WriteFile(s.Path(), data, 0o600) // back to the content with name "w"
	if ev := next(t, ch); ev.err != nil || ev.ep.Name != "w" {
		t.Fatalf("recovered: %+v", ev)
	}

	// Removal.
	s.Remove(ctx, "w")
	if ev := next(t, ch); !errors.Is(ev.err, ErrNotFound) {
		t.Fatalf("removed: %+v", ev)
	}
	quiet(t, ch)
}

func TestWatchPollingFallback(t *testing.T) {
	ctx := context.Background()
	forcePolling, pollInterval = true, 50*time.Millisecond
	t.Cleanup(func() { forcePolling, pollInterval = false, 2*time.Second })
	s := newTestStore(t)
	s.Add(ctx, testEndpoint("w"))
	ch := startWatch(t, s, "w")
	next(t, ch)
	s.Update(ctx, "w", func(e *Endpoint) error { e.Headers = map[string]string{"X": "1"}; return nil })
	if ev := next(t, ch); ev.err != nil || ev.ep.Headers["X"] != "1" {
		t.Fatalf("polled change: %+v", ev)
	}
	quiet(t, ch)
}
