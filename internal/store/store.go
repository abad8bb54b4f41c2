// Package store keeps mcpbridge's named endpoints in a JSON config file,
// their secrets in the OS keyring, watches the config for live reload and
// publishes the status of running bridges as small files.
//
// The config file is shared by processes that run at the same time (the
// tray, CLI invocations, every running bridge), so every write takes a lock
// file, re-reads, modifies and replaces the file atomically; readers never
// need the lock.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ConfigFile is the name of the config file inside the config directory.
const ConfigFile = "config.json"

// Environment overrides, mainly for tests and portable installs.
const (
	EnvConfigDir = "MCPBRIDGE_CONFIG_DIR"
	EnvStateDir  = "MCPBRIDGE_STATE_DIR"
)

// Store gives access to the config file in one directory and to the keyring.
// Its methods are safe for concurrent use, also by several processes.
type Store struct {
	dir    string
	logger *slog.Logger

	// KeyringTimeout bounds every keyring call; zero means DefaultKeyringTimeout.
	KeyringTimeout time.Duration
	// LookupEnv expands ${VAR} in headers; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)

	kr        backend // nil means the OS keyring
	chunkSize int     // 0 means the OS default

	mu sync.Mutex // serialises writers inside this process; the lock file does it across processes
}

// DefaultDir is $MCPBRIDGE_CONFIG_DIR or os.UserConfigDir()/mcpbridge.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvConfigDir); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding config dir: %w", err)
	}
	return filepath.Join(d, "mcpbridge"), nil
}

// New returns a Store for the config in dir (created on first write). A nil
// logger discards.
func New(dir string, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{dir: dir, logger: logger}
}

// Open is New(DefaultDir(), logger).
func Open(logger *slog.Logger) (*Store, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return New(dir, logger), nil
}

// Dir is the config directory.
func (s *Store) Dir() string { return s.dir }

// Path is the config file.
func (s *Store) Path() string { return filepath.Join(s.dir, ConfigFile) }

func (s *Store) lookupEnv(k string) (string, bool) {
	if s.LookupEnv != nil {
		return s.LookupEnv(k)
	}
	return os.LookupEnv(k)
}

// Load reads the config. A missing file is an empty config; a file that
// does not parse or validate is an error wrapping ErrBrokenConfig that
// names the line.
func (s *Store) Load() (*Config, error) {
	cfg, _, err := s.load()
	return cfg, err
}

func (s *Store) load() (*Config, []byte, error) {
	data, err := os.ReadFile(s.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{Version: CurrentVersion}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, data, fmt.Errorf("%s: %w", s.Path(), err)
	}
	return cfg, data, nil
}

// Endpoints lists the configured endpoints in file order.
func (s *Store) Endpoints() ([]Endpoint, error) {
	cfg, err := s.Load()
	if err != nil {
		return nil, err
	}
	return cfg.Endpoints, nil
}

// Endpoint finds an endpoint by name, or by id.
func (s *Store) Endpoint(nameOrID string) (Endpoint, error) {
	cfg, err := s.Load()
	if err != nil {
		return Endpoint{}, err
	}
	i := cfg.find(nameOrID)
	if i < 0 {
		return Endpoint{}, notFound(nameOrID)
	}
	return cfg.Endpoints[i], nil
}

func notFound(name string) error {
	return &UserError{
		Msg: fmt.Sprintf("No endpoint named %q; see mcpbridge endpoint list.", name),
		Err: fmt.Errorf("%q: %w", name, ErrNotFound),
	}
}

// Modify runs fn on the current config under the lock and, if fn returns
// nil and the result is valid, writes it back. A broken file is never
// rewritten; the previous file is kept as config.json.bak.
func (s *Store) Modify(ctx context.Context, fn func(*Config) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating config dir: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(s.dir, ConfigFile+".lock"))
	if err != nil {
		return fmt.Errorf("locking config: %w", err)
	}
	defer unlock()
	cfg, old, err := s.load()
	if err != nil {
		return err
	}
	if err := fn(cfg); err != nil {
		return err
	}
	cfg.Version = CurrentVersion
	if err := cfg.Validate(); err != nil {
		return err
	}
	data, err := cfg.Marshal()
	if err != nil {
		return err
	}
	if bytes.Equal(data, old) {
		return nil
	}
	if old != nil {
		if err := WriteFileAtomic(s.Path()+".bak", old, 0o600); err != nil {
			return fmt.Errorf("backing up config: %w", err)
		}
	}
	if err := WriteFileAtomic(s.Path(), data, 0o600); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	s.logger.Debug("config written", "path", s.Path(), "endpoints", len(cfg.Endpoints))
	return nil
}

// Add stores a new endpoint. It assigns an ID when ep.ID is empty and
// defaults Auth to AuthNone; it fails with ErrExists if the name is taken.
func (s *Store) Add(ctx context.Context, ep Endpoint) (Endpoint, error) {
	if ep.ID == "" {
		ep.ID = uuid.NewString()
	}
	if ep.Auth == "" {
		ep.Auth = AuthNone
	}
	err := s.Modify(ctx, func(c *Config) error {
		if c.find(ep.Name) >= 0 || c.find(ep.ID) >= 0 {
			return &UserError{
				Msg: fmt.Sprintf("An endpoint named %q already exists; use mcpbridge endpoint edit.", ep.Name),
				Err: fmt.Errorf("%q: %w", ep.Name, ErrExists),
			}
		}
		c.Endpoints = append(c.Endpoints, ep)
		return nil
	})
	if err != nil {
		return Endpoint{}, err
	}
	return ep, nil
}

// Update changes the endpoint called nameOrID with fn under the lock and
// returns the stored result. fn must not change the ID.
func (s *Store) Update(ctx context.Context, nameOrID string, fn func(*Endpoint) error) (Endpoint, error) {
	var out Endpoint
	err := s.Modify(ctx, func(c *Config) error {
		i := c.find(nameOrID)
		if i < 0 {
			return notFound(nameOrID)
		}
		ep := c.Endpoints[i]
		ep.Headers = cloneMap(ep.Headers)
		ep.Tools.Allow = append([]string(nil), ep.Tools.Allow...)
		ep.Tools.Deny = append([]string(nil), ep.Tools.Deny...)
		id := ep.ID
		if err := fn(&ep); err != nil {
			return err
		}
		if ep.ID != id {
			return fmt.Errorf("updating endpoint: id cannot change")
		}
		for j := range c.Endpoints {
			if j != i && strings.EqualFold(c.Endpoints[j].Name, ep.Name) {
				return &UserError{
					Msg: fmt.Sprintf("An endpoint named %q already exists.", ep.Name),
					Err: fmt.Errorf("%q: %w", ep.Name, ErrExists),
				}
			}
		}
		c.Endpoints[i] = ep
		out = ep
		return nil
	})
	return out, err
}

// Remove deletes the endpoint from the config and returns it. Its secrets
// stay in the keyring; call DeleteSecrets for them (it may fail on its own
// when the keyring is unavailable).
func (s *Store) Remove(ctx context.Context, nameOrID string) (Endpoint, error) {
	var out Endpoint
	err := s.Modify(ctx, func(c *Config) error {
		i := c.find(nameOrID)
		if i < 0 {
			return notFound(nameOrID)
		}
		out = c.Endpoints[i]
		c.Endpoints = append(c.Endpoints[:i], c.Endpoints[i+1:]...)
		return nil
	})
	return out, err
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// WriteFileAtomic writes data to a temp file in the same directory, syncs
// it and renames it over name, so readers see the old or the new content,
// never a torn file. The CLI uses it for AI clients' config files too.
func WriteFileAtomic(name string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(perm); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if _, err = io.Copy(f, bytes.NewReader(data)); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return rename(f.Name(), name)
}
