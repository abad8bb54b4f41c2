// Package clientconfig builds and installs the entries that make desktop AI
// clients (Claude Desktop, Cursor, VS Code) launch "mcpbridge run NAME". It
// is shared by the config command and the tray so both write the same thing.
package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// The clients we know how to configure.
const (
	Claude = "claude"
	Cursor = "cursor"
	VSCode = "vscode"
)

// Clients lists the known clients in display order.
var Clients = []string{Claude, Cursor, VSCode}

// Known reports whether client is one of Clients.
func Known(client string) bool {
	switch client {
	case Claude, Cursor, VSCode:
		return true
	}
	return false
}

// DisplayName is the client's product name.
func DisplayName(client string) string {
	switch client {
	case Claude:
		return "Claude Desktop"
	case Cursor:
		return "Cursor"
	case VSCode:
		return "VS Code"
	}
	return client
}

// ServerEntry is one client's launch entry for endpoint name, run by the
// binary exe. A non-empty configDir (a custom MCPBRIDGE_CONFIG_DIR) is
// passed on as absolute path, or the client's mcpbridge would not find the
// endpoint.
func ServerEntry(client, exe, name, configDir string) map[string]any {
	e := map[string]any{"command": exe, "args": []string{"run", name}}
	if client == VSCode {
		e["type"] = "stdio"
	}
	if configDir != "" {
		if abs, err := filepath.Abs(configDir); err == nil {
			configDir = abs
		}
		e["env"] = map[string]string{store.EnvConfigDir: configDir}
	}
	return e
}

// Snippet is the JSON document a person pastes into the client's config:
// VS Code keeps servers under "servers", the others under "mcpServers".
func Snippet(client, name string, entry map[string]any) []byte {
	top := "mcpServers"
	if client == VSCode {
		top = "servers"
	}
	b, _ := json.MarshalIndent(map[string]any{top: map[string]any{name: entry}}, "", "  ")
	return append(b, '\n')
}

// DefaultPath is where a client keeps its MCP servers. Claude Desktop's
// file lives under the OS config dir on every platform (~/.config,
// ~/Library/Application Support, %APPDATA%). VS Code has no per-user file
// we could safely edit, so it is a *store.UserError.
func DefaultPath(client string) (string, error) {
	switch client {
	case Claude:
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("finding Claude's config: %w", err)
		}
		return filepath.Join(d, "Claude", "claude_desktop_config.json"), nil
	case Cursor:
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding Cursor's config: %w", err)
		}
		return filepath.Join(h, ".cursor", "mcp.json"), nil
	}
	return "", &store.UserError{
		Msg: "VS Code keeps MCP servers per workspace in .vscode/mcp.json; print the entry with config snippet --client vscode, or pass --file.",
		Err: fmt.Errorf("no default config file for %s", client),
	}
}

// Install sets mcpServers[name] in the JSON file at path and keeps
// every other entry, field and their order. It refuses a file that does
// not parse rather than guess, and backs the old file up first.
func Install(path, name string, server map[string]any) (added bool, err error) {
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", path, err)
	default:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	top := &orderedObject{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, top); err != nil {
			return false, &store.UserError{
				Msg: fmt.Sprintf("%s is not valid JSON (%v); fix or move it, nothing was changed.", path, err),
				Err: fmt.Errorf("parsing %s: %w", path, err),
			}
		}
	}
	servers := &orderedObject{}
	if raw, ok := top.get("mcpServers"); ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, servers); err != nil {
			return false, &store.UserError{
				Msg: fmt.Sprintf("\"mcpServers\" in %s is not a JSON object; fix it, nothing was changed.", path),
				Err: fmt.Errorf("parsing mcpServers in %s: %w", path, err),
			}
		}
	}
	entry, err := json.Marshal(server)
	if err != nil {
		return false, err
	}
	_, existed := servers.get(name)
	servers.set(name, entry)
	rawServers, err := json.Marshal(servers)
	if err != nil {
		return false, err
	}
	top.set("mcpServers", rawServers)
	flat, err := json.Marshal(top)
	if err != nil {
		return false, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, flat, "", "  "); err != nil {
		return false, err
	}
	out.WriteByte('\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if old != nil {
		if err := store.WriteFileAtomic(path+".bak", old, mode); err != nil {
			return false, fmt.Errorf("backing up %s: %w", path, err)
		}
	}
	if err := store.WriteFileAtomic(path, out.Bytes(), mode); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return !existed, nil
}

// orderedObject is a JSON object that keeps its keys' order and leaves
// values it does not touch byte for byte, so a merge does not reshuffle a
// file people edit by hand.
type orderedObject struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *orderedObject) get(k string) (json.RawMessage, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *orderedObject) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	*o = orderedObject{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(k, v) // a repeated key keeps its first place and last value, like encoding/json
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	return nil
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
