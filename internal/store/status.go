package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// State is what a running bridge is doing.
type State string

const (
	StateConnecting State = "connecting" // started, no answer from the server yet
	StateConnected  State = "connected"  // the server answered; a request or stream is active
	StateIdle       State = "idle"       // connected, nothing in flight
	StateError      State = "error"      // the last attempt failed; see LastError
)

// Status is what one running bridge publishes about itself, for the tray
// and `mcpbridge status`. It holds no secrets and no request contents.
type Status struct {
	Endpoint     string    `json:"endpoint"`
	PID          int       `json:"pid"`
	State        State     `json:"state"`
	Session      bool      `json:"session"` // the server gave an Mcp-Session-Id
	Started      time.Time `json:"started"`
	Since        time.Time `json:"since"` // when State last changed
	Requests     int64     `json:"requests"`
	Errors       int64     `json:"errors"`
	LastError    string    `json:"last_error,omitempty"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	Updated      time.Time `json:"updated"`
}

// DefaultStateDir is where status files live: $MCPBRIDGE_STATE_DIR, else
// $XDG_RUNTIME_DIR/mcpbridge/status (per login, cleared on logout), else
// os.UserCacheDir()/mcpbridge/status.
func DefaultStateDir() (string, error) {
	if d := os.Getenv(EnvStateDir); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "mcpbridge", "status"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding state dir: %w", err)
	}
	return filepath.Join(d, "mcpbridge", "status"), nil
}

// statusInterval is the least time between two writes of one status file.
var statusInterval = time.Second

// StatusPublisher keeps one bridge's status file up to date. Its methods
// are cheap, never block on the disk and are safe for concurrent use: the
// relay calls them on every request, and a background goroutine writes at
// most once per statusInterval, always writing the latest state last.
// Writing failures are logged, never returned: status is best effort.
type StatusPublisher struct {
	path   string
	logger *slog.Logger

	mu     sync.Mutex
	st     Status
	dirty  bool
	closed bool

	kick chan struct{}
	done chan struct{}
	exit chan struct{}
	once sync.Once
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// NewStatusPublisher starts publishing the status of this process's bridge
// to endpointName (may be "" for an unnamed --url run) in dir. Call Close
// when the bridge stops; it removes the file.
func NewStatusPublisher(dir, endpointName string, logger *slog.Logger) *StatusPublisher {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pid := os.Getpid()
	file := unsafeName.ReplaceAllString(endpointName, "_")
	if file == "" {
		file = "unnamed"
	}
	now := time.Now()
	p := &StatusPublisher{
		path:   filepath.Join(dir, strconv.Itoa(pid)+"-"+file+".json"),
		logger: logger,
		st: Status{
			Endpoint: endpointName,
			PID:      pid,
			State:    StateConnecting,
			Started:  now,
			Since:    now,
		},
		dirty: true,
		kick:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		exit:  make(chan struct{}),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		logger.Debug("status: creating dir", "err", err)
	}
	p.flush()
	go p.loop()
	return p
}

// Path is the status file this publisher writes.
func (p *StatusPublisher) Path() string { return p.path }

func (p *StatusPublisher) update(fn func(st *Status) bool) {
	p.mu.Lock()
	if p.closed || !fn(&p.st) {
		p.mu.Unlock()
		return
	}
	p.dirty = true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// SetState records a state change (no-op if unchanged).
func (p *StatusPublisher) SetState(s State) {
	p.update(func(st *Status) bool {
		if st.State == s {
			return false
		}
		st.State = s
		st.Since = time.Now()
		return true
	})
}

// SetSession records whether the server gave the bridge a session id.
func (p *StatusPublisher) SetSession(present bool) {
	p.update(func(st *Status) bool {
		changed := st.Session != present
		st.Session = present
		return changed
	})
}

// RequestRelayed counts one message relayed to the server.
func (p *StatusPublisher) RequestRelayed() {
	p.update(func(st *Status) bool {
		st.Requests++
		st.LastActivity = time.Now()
		return true
	})
}

// Error counts a failure and keeps its text for display. Use a
// *UserError (or an error whose text holds no secrets); the text is
// stored as is, cut to 300 bytes. It does not change State.
func (p *StatusPublisher) Error(err error) {
	if err == nil {
		return
	}
	msg, ok := UserMessage(err)
	if !ok {
		msg = err.Error()
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	p.update(func(st *Status) bool {
		st.Errors++
		st.LastError = msg
		st.LastActivity = time.Now()
		return true
	})
}

// Snapshot returns the status as it is now.
func (p *StatusPublisher) Snapshot() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st
}

// Close stops publishing and removes the status file. It may be called
// more than once.
func (p *StatusPublisher) Close() error {
	var err error
	p.once.Do(func() {
		close(p.done)
		<-p.exit
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		if e := os.Remove(p.path); e != nil && !errors.Is(e, fs.ErrNotExist) {
			err = fmt.Errorf("removing status file: %w", e)
		}
	})
	return err
}

func (p *StatusPublisher) loop() {
	defer close(p.exit)
	last := time.Now()
	for {
		select {
		case <-p.done:
			return
		case <-p.kick:
		}
		if wait := statusInterval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-p.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		p.flush()
		last = time.Now()
	}
}

func (p *StatusPublisher) flush() {
	p.mu.Lock()
	if !p.dirty || p.closed {
		p.mu.Unlock()
		return
	}
	p.dirty = false
	st := p.st
	p.mu.Unlock()
	st.Updated = time.Now()
	data, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = WriteFileAtomic(p.path, append(data, '\n'), 0o600)
	}
	if err != nil {
		p.logger.Debug("status: write failed", "path", p.path, "err", err)
	}
}

// ReadStatuses returns the status of every running bridge, sorted by
// endpoint then pid. Files left by processes that are gone (a crash, a
// kill -9) are removed and skipped; a missing dir is no bridges.
func ReadStatuses(dir string) ([]Status, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading status dir: %w", err)
	}
	var out []Status
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		full := filepath.Join(dir, name)
		data, err := os.ReadFile(full)
		if err != nil {
			continue // removed meanwhile
		}
		var st Status
		if err := json.Unmarshal(data, &st); err != nil || st.PID <= 0 {
			continue
		}
		if !processAlive(st.PID) {
			os.Remove(full)
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Endpoint != out[j].Endpoint {
			return out[i].Endpoint < out[j].Endpoint
		}
		return out[i].PID < out[j].PID
	})
	return out, nil
}
