package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// CurrentVersion is the config schema this build writes. Files with a
// higher version are refused rather than rewritten, so an older mcpbridge
// never drops fields it does not know.
const CurrentVersion = 1

// Config is the whole config file.
type Config struct {
	Version   int        `json:"version"`
	Endpoints []Endpoint `json:"endpoints"`
}

func (c *Config) find(nameOrID string) int {
	for i, ep := range c.Endpoints {
		if ep.Name == nameOrID || ep.ID == nameOrID {
			return i
		}
	}
	for i, ep := range c.Endpoints {
		if strings.EqualFold(ep.Name, nameOrID) {
			return i
		}
	}
	return -1
}

// Find returns the endpoint with that name (or id).
func (c *Config) Find(nameOrID string) (Endpoint, bool) {
	if i := c.find(nameOrID); i >= 0 {
		return c.Endpoints[i], true
	}
	return Endpoint{}, false
}

// Validate checks every endpoint and that names and ids are unique (names
// case-insensitively, because they end up in other programs' config keys).
func (c *Config) Validate() error {
	names := map[string]bool{}
	ids := map[string]bool{}
	for i := range c.Endpoints {
		ep := &c.Endpoints[i]
		if err := ep.Validate(); err != nil {
			return err
		}
		if n := strings.ToLower(ep.Name); names[n] {
			return &ValidationError{Endpoint: ep.Name, Field: "name", Problem: "is used by more than one endpoint"}
		} else {
			names[n] = true
		}
		if ids[ep.ID] {
			return &ValidationError{Endpoint: ep.Name, Field: "id", Problem: "is used by more than one endpoint"}
		}
		ids[ep.ID] = true
	}
	return nil
}

// Marshal renders the config as indented JSON for people to read and edit.
func (c *Config) Marshal() ([]byte, error) {
	out := *c
	if out.Endpoints == nil {
		out.Endpoints = []Endpoint{}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding config: %w", err)
	}
	return append(b, '\n'), nil
}

// ParseConfig decodes and validates a config file. Syntax and type errors
// name the line and column; unknown fields are errors too, since they are
// almost always typos that would otherwise be ignored silently.
func ParseConfig(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: file is empty", ErrBrokenConfig)
	}
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &probe); err == nil && probe.Version != nil && *probe.Version > CurrentVersion {
		return nil, &UserError{
			Msg: fmt.Sprintf("The config file has version %d, newer than this mcpbridge understands (%d); upgrade mcpbridge.", *probe.Version, CurrentVersion),
			Err: fmt.Errorf("%w: version %d", ErrBrokenConfig, *probe.Version),
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBrokenConfig, describeJSONError(data, err, dec.InputOffset()))
	}
	// Anything after the object, even a stray "}" (which dec.More does not
	// report at the top level), means the file is not what it seems.
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(data, int(dec.InputOffset()))
		return nil, fmt.Errorf("%w: line %d, column %d: unexpected data after the end of the config", ErrBrokenConfig, line, col)
	}
	if cfg.Version > CurrentVersion {
		return nil, &UserError{
			Msg: fmt.Sprintf("The config file has version %d, newer than this mcpbridge understands (%d); upgrade mcpbridge.", cfg.Version, CurrentVersion),
			Err: fmt.Errorf("%w: version %d", ErrBrokenConfig, cfg.Version),
		}
	}
	if cfg.Version == 0 {
		return nil, fmt.Errorf("%w: missing \"version\" (want %d)", ErrBrokenConfig, CurrentVersion)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBrokenConfig, err)
	}
	return &cfg, nil
}

func describeJSONError(data []byte, err error, fallback int64) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	off := fallback
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "file ends in the middle of the JSON"
	}
	line, col := lineCol(data, int(off))
	return fmt.Sprintf("line %d, column %d: %s", line, col, msg)
}

// lineCol turns a byte offset into 1-based line and column numbers.
func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// rename replaces newpath with oldpath. On Windows a reader holding the
// target open makes the replace fail for a moment, so it is retried briefly.
func rename(oldpath, newpath string) error {
	err := os.Rename(oldpath, newpath)
	if runtime.GOOS != "windows" {
		return err
	}
	for i := 0; err != nil && i < 20; i++ {
		time.Sleep(25 * time.Millisecond)
		err = os.Rename(oldpath, newpath)
	}
	return err
}
