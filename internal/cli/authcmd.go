package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/auth"
	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	register(&command{name: "auth", summary: "sign in to or out of an OAuth endpoint (login, logout, status)", run: runAuth})
}

// oauthFlags are the OAuth knobs of run (and auth login).
type oauthFlags struct {
	enabled      bool
	noBrowser    bool
	clientID     string
	clientSecret string
	metadataURL  string
	scopes       string
	callbackPort int
}

func (o *oauthFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.enabled, "oauth", false, "sign in with OAuth when the server asks (tokens kept for this process only; use a named endpoint to keep them in the keyring)")
	fs.BoolVar(&o.noBrowser, "no-browser", false, "never open a browser from the relay: fail with a hint to run 'mcpbridge auth login NAME'")
	fs.StringVar(&o.clientID, "oauth-client-id", "", "pre-registered OAuth client id")
	fs.StringVar(&o.clientSecret, "oauth-client-secret", "", "pre-registered OAuth client secret (prefer a named endpoint)")
	fs.StringVar(&o.metadataURL, "oauth-client-metadata-url", "", "https URL of this client's Client ID Metadata Document")
	fs.StringVar(&o.scopes, "oauth-scope", "", "scopes to ask for, space or comma separated (default: what the server suggests)")
	fs.IntVar(&o.callbackPort, "oauth-callback-port", 0, "loopback port for the sign-in redirect (default: any free port)")
}

func (o *oauthFlags) options(url, name string) auth.Options {
	var scopes []string
	for _, s := range strings.FieldsFunc(o.scopes, func(r rune) bool { return r == ',' || r == ' ' }) {
		scopes = append(scopes, s)
	}
	return auth.Options{
		ServerURL:         url,
		ClientID:          o.clientID,
		ClientSecret:      o.clientSecret,
		ClientMetadataURL: o.metadataURL,
		Scopes:            scopes,
		CallbackPort:      o.callbackPort,
		Interactive:       !o.noBrowser,
		EndpointName:      name,
	}
}

// newOAuth builds the authorizer on the bridge's own transport (proxy, CA
// file, cookies), with a total timeout: discovery and token requests are
// short, unlike MCP streams.
func newOAuth(o auth.Options, hc *http.Client, log *slog.Logger) *auth.OAuth {
	ahc := *hc
	ahc.Timeout = 30 * time.Second
	o.HTTPClient = &ahc
	o.Logger = log
	return auth.New(o)
}

func runAuth(ctx context.Context, env *Env, args []string) int {
	usage := "Usage: mcpbridge auth login|logout|status NAME [--oauth-client-id ID] [--oauth-scope S]\n"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(env.Stderr, usage)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	verb := args[0]
	fs := flag.NewFlagSet("mcpbridge auth "+verb, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var of oauthFlags
	of.register(fs)
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if len(pos) != 1 {
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	log, closeLog, err := newLogger(env.Stderr, *logLevel, "")
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	defer closeLog()
	st, err := store.Open(log)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(err))
		return ExitError
	}
	ep, err := st.Endpoint(pos[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(err))
		return ExitUsage
	}
	if ep.Auth != store.AuthOAuth {
		fmt.Fprintf(env.Stderr, "mcpbridge: endpoint %s does not use OAuth (its auth is %q; change it with 'mcpbridge endpoint edit %s --auth oauth')\n", ep.Name, ep.Auth, ep.Name)
		return ExitUsage
	}
	hc, err := bridge.NewHTTPClient(bridge.TransportOptions{CAFile: ep.Options.CAFile, DialTimeout: time.Duration(ep.Options.ConnectTimeout)})
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %v\n", err)
		return ExitUsage
	}
	o := of.options(ep.URL, ep.Name)
	o.Store = auth.NewKeyringStore(st, ep.ID)
	a := newOAuth(o, hc, log)
	switch verb {
	case "login":
		fmt.Fprintf(env.Stderr, "Signing in to %s: finish in the browser window that opens…\n", ep.Name)
		if err := a.Login(ctx); err != nil {
			fmt.Fprintf(env.Stderr, "mcpbridge: sign-in failed: %s\n", userText(err))
			return ExitError
		}
		fmt.Fprintf(env.Stdout, "Signed in to %s; the tokens are in the OS keyring.\n", ep.Name)
	case "logout":
		if err := a.Logout(ctx); err != nil {
			fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(err))
			return ExitError
		}
		fmt.Fprintf(env.Stdout, "Signed out of %s.\n", ep.Name)
	case "status":
		ok, err := a.SignedIn(ctx)
		if err != nil {
			fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(err))
			return ExitError
		}
		if ok {
			fmt.Fprintf(env.Stdout, "%s: signed in\n", ep.Name)
		} else {
			fmt.Fprintf(env.Stdout, "%s: not signed in (run 'mcpbridge auth login %s')\n", ep.Name, ep.Name)
		}
	default:
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	return ExitOK
}
