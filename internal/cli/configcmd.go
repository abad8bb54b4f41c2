package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	register(&command{
		name:    "config",
		summary: "print or install the AI client config that launches an endpoint",
		run:     runConfig,
	})
}

const configUsage = `Usage:
  mcpbridge config snippet NAME --client claude|cursor|vscode
  mcpbridge config install NAME --client claude|cursor [--file PATH]
  mcpbridge config path

snippet prints the JSON a client needs to launch "mcpbridge run NAME".
install merges it into the client's config file, keeping everything else
and a backup (PATH.bak); restart the client afterwards.
`

// executable is the binary the AI client should launch; tests replace it.
// The path is not resolved through symlinks, so a package manager's
// stable link keeps working across upgrades.
var executable = os.Executable

func runConfig(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, configUsage)
		return ExitUsage
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "snippet", "install", "path":
	case "help", "-h", "--help", "-help":
		fmt.Fprint(env.Stdout, configUsage)
		return ExitOK
	default:
		return usageError(env, "unknown config command %q (want snippet, install or path)", sub)
	}
	fset := newFlagSet("config "+sub, env)
	client := fset.String("client", "", "claude, cursor or vscode")
	file := fset.String("file", "", "client config file (install)")
	pos, err := parseInterspersed(fset, rest)
	if err != nil {
		return usageError(env, "%v", err)
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	if sub == "path" {
		fmt.Fprintln(env.Stdout, st.Path())
		return ExitOK
	}
	if len(pos) != 1 {
		return usageError(env, "config %s takes one endpoint NAME", sub)
	}
	switch *client {
	case "claude", "cursor", "vscode":
	case "":
		return usageError(env, "config %s needs --client (claude, cursor or vscode)", sub)
	default:
		return usageError(env, "unknown --client %q (want claude, cursor or vscode)", *client)
	}
	ep, err := st.Endpoint(pos[0])
	if err != nil {
		return failure(env, err)
	}
	exe, err := executable()
	if err != nil {
		return failure(env, fmt.Errorf("finding the mcpbridge binary: %w", err))
	}
	server := serverEntry(env, *client, exe, ep.Name)

	if sub == "snippet" {
		top := "mcpServers"
		if *client == "vscode" {
			top = "servers"
		}
		b, _ := json.MarshalIndent(map[string]any{top: map[string]any{ep.Name: server}}, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return ExitOK
	}

	path := *file
	if path == "" {
		if path, err = clientConfigPath(*client); err != nil {
			return failure(env, err)
		}
	}
	added, err := installServer(path, ep.Name, server)
	if err != nil {
		return failure(env, err)
	}
	verb := "Updated"
	if added {
		verb = "Added"
	}
	fmt.Fprintf(env.Stdout, "%s %s in %s; restart the client to use it.\n", verb, ep.Name, path)
	return ExitOK
}

// serverEntry is one client's launch entry for endpoint name. A custom
// config dir is passed on, or the client's mcpbridge would not find the
// endpoint.
func serverEntry(env *Env, client, exe, name string) map[string]any {
	e := map[string]any{"command": exe, "args": []string{"run", name}}
	if client == "vscode" {
		e["type"] = "stdio"
	}
	if dir := env.getenv(store.EnvConfigDir); dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		e["env"] = map[string]string{store.EnvConfigDir: dir}
	}
	return e
}

// clientConfigPath is where a client keeps its MCP servers. Claude
// Desktop's file lives under the OS config dir on every platform
// (~/.config, ~/Library/Application Support, %APPDATA%).
func clientConfigPath(client string) (string, error) {
	switch client {
	case "claude":
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("finding Claude's config: %w", err)
		}
		return filepath.Join(d, "Claude", "claude_desktop_config.json"), nil
	case "cursor":
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

// installServer sets mcpServers[name] in the JSON file at path and keeps
// every other entry, field and their order. It refuses a file that does
// not parse rather than guess, and backs the old file up first.
func installServer(path, name string, server map[string]any) (added bool, err error) {
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
