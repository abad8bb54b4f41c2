package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	register(&command{
		name:    "endpoint",
		summary: "add, list, show, edit or remove named endpoints",
		run:     runEndpoint,
	})
}

const endpointUsage = `Usage:
  mcpbridge endpoint add NAME --url URL [flags]
  mcpbridge endpoint list
  mcpbridge endpoint show NAME
  mcpbridge endpoint edit NAME [flags]
  mcpbridge endpoint remove NAME

Flags of add and edit:
  --name NAME          (edit: rename)
  --url URL
  --header "K: V"      repeatable; V may use ${ENV_VAR} or keyring:SECRET
  --remove-header K    (edit) repeatable
  --auth KIND          none, bearer, headers or oauth
  --allow-http         allow plain http to a non-loopback host
  --ca-file PATH       extra PEM root certificates
  --allow-tool GLOB    repeatable; only matching tools are offered
  --deny-tool GLOB     repeatable; matching tools are hidden (edit: "" clears)
  --connect-timeout D, --request-timeout D   e.g. 10s
`

func runEndpoint(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, endpointUsage)
		return ExitUsage
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "add":
		return endpointAdd(ctx, env, rest)
	case "list", "ls":
		return endpointList(ctx, env, rest)
	case "show":
		return endpointShow(ctx, env, rest)
	case "edit":
		return endpointEdit(ctx, env, rest)
	case "remove", "rm":
		return endpointRemove(ctx, env, rest)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(env.Stdout, endpointUsage)
		return ExitOK
	}
	return usageError(env, "unknown endpoint command %q (want add, list, show, edit or remove)", sub)
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// durationFlag accepts "10s" style durations.
type durationFlag struct{ d *store.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return time.Duration(*f.d).String()
}

func (f durationFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration like 30s")
	}
	*f.d = store.Duration(d)
	return nil
}

// endpointFlags are the flags add and edit share.
type endpointFlags struct {
	name, url, auth, caFile  string
	allowHTTP                bool
	headers, removeHeaders   stringsFlag
	allowTools, denyTools    stringsFlag
	connectTimeout, reqTimeo store.Duration
}

func (f *endpointFlags) register(fs *flag.FlagSet, edit bool) {
	fs.StringVar(&f.name, "name", "", "endpoint name")
	fs.StringVar(&f.url, "url", "", "server URL")
	fs.StringVar(&f.auth, "auth", "", "none, bearer, headers or oauth")
	fs.StringVar(&f.caFile, "ca-file", "", "PEM file with extra root certificates")
	fs.BoolVar(&f.allowHTTP, "allow-http", false, "allow plain http")
	fs.Var(&f.headers, "header", `header "K: V" (repeatable)`)
	if edit {
		fs.Var(&f.removeHeaders, "remove-header", "header name to remove (repeatable)")
	}
	fs.Var(&f.allowTools, "allow-tool", "tool glob to allow (repeatable)")
	fs.Var(&f.denyTools, "deny-tool", "tool glob to deny (repeatable)")
	fs.Var(durationFlag{&f.connectTimeout}, "connect-timeout", "connect timeout")
	fs.Var(durationFlag{&f.reqTimeo}, "request-timeout", "request timeout")
}

// apply copies the flags that were given onto ep.
func (f *endpointFlags) apply(fs *flag.FlagSet, ep *store.Endpoint) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if err != nil {
			return
		}
		switch fl.Name {
		case "name":
			ep.Name = f.name
		case "url":
			ep.URL = f.url
		case "auth":
			ep.Auth = store.AuthKind(f.auth)
		case "ca-file":
			ep.Options.CAFile = ""
			if f.caFile != "" {
				ep.Options.CAFile, err = filepath.Abs(f.caFile)
			}
		case "allow-http":
			ep.Options.AllowHTTP = f.allowHTTP
		case "remove-header":
			for _, k := range f.removeHeaders {
				found := false
				for hk := range ep.Headers {
					if strings.EqualFold(hk, k) {
						delete(ep.Headers, hk)
						found = true
					}
				}
				if !found {
					err = fmt.Errorf("--remove-header: endpoint %s has no header %q", ep.Name, k)
				}
			}
		case "header":
			for _, h := range f.headers {
				k, v, ok := strings.Cut(h, ":")
				k, v = strings.TrimSpace(k), strings.TrimSpace(v)
				if !ok || k == "" {
					err = fmt.Errorf("--header %q: want \"Name: value\"", redactArg(h))
					return
				}
				if ep.Headers == nil {
					ep.Headers = map[string]string{}
				}
				for hk := range ep.Headers {
					if strings.EqualFold(hk, k) {
						delete(ep.Headers, hk)
					}
				}
				ep.Headers[k] = v
			}
		case "allow-tool":
			ep.Tools.Allow = nonEmpty(f.allowTools)
		case "deny-tool":
			ep.Tools.Deny = nonEmpty(f.denyTools)
		case "connect-timeout":
			ep.Options.ConnectTimeout = f.connectTimeout
		case "request-timeout":
			ep.Options.RequestTimeout = f.reqTimeo
		}
	})
	return err
}

// redactArg keeps a header's name but not its value in messages, in case
// someone typed a secret despite the advice.
func redactArg(h string) string {
	if k, _, ok := strings.Cut(h, ":"); ok {
		return k + ": ..."
	}
	if len(h) > 12 {
		return h[:4] + "..."
	}
	return h
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// warnLiteralSecrets points out header values that look like credentials
// typed in clear: they would end up in the config file.
func warnLiteralSecrets(env *Env, ep store.Endpoint) {
	for k, v := range ep.Headers {
		lk := strings.ToLower(k)
		if strings.Contains(v, "${") || strings.HasPrefix(v, "keyring:") {
			continue
		}
		if lk == "authorization" || strings.Contains(lk, "key") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") {
			fmt.Fprintf(env.Stderr, "mcpbridge: warning: header %s is stored in the config file in clear; consider \"%s: keyring:NAME\" and mcpbridge secret set %s --key NAME\n", k, k, ep.Name)
		}
	}
}

func endpointAdd(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet("endpoint add", env)
	var f endpointFlags
	f.register(fs, false)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(env, err)
	}
	switch {
	case len(pos) == 1 && f.name == "":
		f.name = pos[0]
		fs.Set("name", pos[0])
	case len(pos) > 1 || len(pos) == 1 && f.name != pos[0]:
		return usageError(env, "endpoint add takes one NAME (or --name)")
	}
	if f.name == "" {
		return usageError(env, "endpoint add needs a NAME")
	}
	if f.url == "" {
		return usageError(env, "endpoint add needs --url")
	}
	ep := store.Endpoint{Auth: store.AuthNone}
	if err := f.apply(fs, &ep); err != nil {
		return usageError(env, "%v", err)
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	ep, err = st.Add(ctx, ep)
	if err != nil {
		return failure(env, err)
	}
	warnLiteralSecrets(env, ep)
	fmt.Fprintf(env.Stdout, "Added endpoint %s (%s).\n", ep.Name, ep.URL)
	if names := ep.SecretNames(); len(names) > 0 {
		fmt.Fprintf(env.Stdout, "Store its secret with: mcpbridge secret set %s --key %s\n", ep.Name, names[0])
	}
	return ExitOK
}

func endpointList(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet("endpoint list", env)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(env, err)
	}
	if len(pos) > 0 {
		return usageError(env, "endpoint list takes no arguments")
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	eps, err := st.Endpoints()
	if err != nil {
		return failure(env, err)
	}
	if len(eps) == 0 {
		fmt.Fprintln(env.Stdout, "No endpoints yet; add one with: mcpbridge endpoint add NAME --url https://host/mcp")
		return ExitOK
	}
	sc := newSecretChecker(st)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tAUTH\tSECRET\tURL")
	for _, ep := range eps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ep.Name, ep.Auth, sc.summary(ctx, ep), ep.URL)
	}
	tw.Flush()
	if sc.unavailable != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(sc.unavailable))
	}
	return ExitOK
}

// secretChecker reports which secrets are stored, and stops asking once
// the keyring is unavailable so a locked keyring costs one timeout, not
// one per endpoint.
type secretChecker struct {
	st          *store.Store
	unavailable error
}

func newSecretChecker(st *store.Store) *secretChecker { return &secretChecker{st: st} }

func (c *secretChecker) status(ctx context.Context, ep store.Endpoint) map[string]string {
	out := map[string]string{}
	for _, n := range ep.SecretNames() {
		if c.unavailable != nil {
			out[n] = "unknown"
			continue
		}
		ok, err := c.st.HasSecret(ctx, ep.ID, n)
		switch {
		case errors.Is(err, store.ErrKeyringUnavailable):
			c.unavailable = err
			out[n] = "unknown"
		case err != nil:
			out[n] = "unknown"
		case ok:
			out[n] = "stored"
		default:
			out[n] = "missing"
		}
	}
	return out
}

func (c *secretChecker) summary(ctx context.Context, ep store.Endpoint) string {
	names := ep.SecretNames()
	if len(names) == 0 {
		return "-"
	}
	st := c.status(ctx, ep)
	var missing, unknown []string
	for _, n := range names {
		switch st[n] {
		case "missing":
			missing = append(missing, n)
		case "unknown":
			unknown = append(unknown, n)
		}
	}
	switch {
	case len(missing) > 0:
		return "missing " + strings.Join(missing, ",")
	case len(unknown) > 0:
		return "unknown"
	}
	return "stored"
}

func endpointShow(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet("endpoint show", env)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(env, err)
	}
	if len(pos) != 1 {
		return usageError(env, "endpoint show takes one NAME")
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	ep, err := st.Endpoint(pos[0])
	if err != nil {
		return failure(env, err)
	}
	sc := newSecretChecker(st)
	out := struct {
		store.Endpoint
		Secrets map[string]string `json:"secrets,omitempty"`
	}{ep, sc.status(ctx, ep)}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return failure(env, err)
	}
	fmt.Fprintf(env.Stdout, "%s\n", b)
	if sc.unavailable != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(sc.unavailable))
	}
	return ExitOK
}

func endpointEdit(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet("endpoint edit", env)
	var f endpointFlags
	f.register(fs, true)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(env, err)
	}
	if len(pos) != 1 {
		return usageError(env, "endpoint edit takes one NAME")
	}
	if fs.NFlag() == 0 {
		return usageError(env, "endpoint edit: nothing to change (see mcpbridge endpoint help)")
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	var flagErr error
	ep, err := st.Update(ctx, pos[0], func(ep *store.Endpoint) error {
		flagErr = f.apply(fs, ep)
		return flagErr
	})
	if flagErr != nil {
		return usageError(env, "%v", flagErr)
	}
	if err != nil {
		return failure(env, err)
	}
	warnLiteralSecrets(env, ep)
	fmt.Fprintf(env.Stdout, "Updated endpoint %s.\n", ep.Name)
	return ExitOK
}

func endpointRemove(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet("endpoint remove", env)
	keep := fs.Bool("keep-secrets", false, "leave the endpoint's secrets in the keyring")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(env, err)
	}
	if len(pos) != 1 {
		return usageError(env, "endpoint remove takes one NAME")
	}
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	ep, err := st.Remove(ctx, pos[0])
	if err != nil {
		return failure(env, err)
	}
	fmt.Fprintf(env.Stdout, "Removed endpoint %s.\n", ep.Name)
	if !*keep {
		if err := st.DeleteSecrets(ctx, ep); err != nil {
			fmt.Fprintf(env.Stderr, "mcpbridge: warning: its secrets may still be in the keyring: %s\n", userText(err))
		}
	}
	return ExitOK
}

// openStore opens the config named by $MCPBRIDGE_CONFIG_DIR (read through
// env so tests can set it) or the default.
func openStore(env *Env) (*store.Store, error) {
	dir := env.getenv(store.EnvConfigDir)
	if dir == "" {
		var err error
		if dir, err = store.DefaultDir(); err != nil {
			return nil, err
		}
	}
	return store.New(dir, nil), nil
}

func newFlagSet(name string, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseInterspersed parses flags that may come before or after the
// positional arguments ("secret set NAME --key x"), which flag.Parse alone
// does not allow. "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func flagError(env *Env, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(env.Stdout, endpointUsage)
		return ExitOK
	}
	return usageError(env, "%v", err)
}

func usageError(env *Env, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", fmt.Sprintf(format, args...))
	return ExitUsage
}

// failure prints err as one line and picks the exit code: invalid input
// is a usage error, anything else a failure.
func failure(env *Env, err error) int {
	msg := strings.ReplaceAll(userText(err), "\n", " ")
	fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", msg)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		return ExitUsage
	}
	return ExitError
}
