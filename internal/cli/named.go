package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/auth"
	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

func init() {
	namedEndpointConfig = loadNamedEndpoint
}

// liveEndpoint is the endpoint a running bridge serves, updated by the config
// watcher. Headers are resolved from it at send time, so a changed header or
// secret applies to the next request without touching the session.
type liveEndpoint struct {
	st *store.Store
	mu sync.Mutex
	ep store.Endpoint
}

func (l *liveEndpoint) get() store.Endpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ep
}

func (l *liveEndpoint) set(ep store.Endpoint) {
	l.mu.Lock()
	l.ep = ep
	l.mu.Unlock()
}

func (l *liveEndpoint) header(ctx context.Context) (http.Header, error) {
	return l.st.ResolveHeaders(ctx, l.get())
}

// loadNamedEndpoint reads a named endpoint from the config, publishes the
// bridge's status for the tray, and watches the config for changes.
func loadNamedEndpoint(ctx context.Context, env *Env, name string, oauth *oauthFlags, log *slog.Logger) (relayConfig, func(), int) {
	st, err := store.Open(log)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(err))
		return relayConfig{}, nil, ExitError
	}
	ep, err := st.Endpoint(name)
	if err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: %s\n", userText(err))
		return relayConfig{}, nil, ExitUsage
	}
	if _, err := bridge.ValidateURL(ep.URL, ep.Options.AllowHTTP); err != nil {
		fmt.Fprintf(env.Stderr, "mcpbridge: endpoint %s: %v\n", ep.Name, err)
		return relayConfig{}, nil, ExitUsage
	}
	live := &liveEndpoint{st: st, ep: ep}
	cfg := relayConfig{
		url:       ep.URL,
		allowHTTP: ep.Options.AllowHTTP,
		caFile:    ep.Options.CAFile,
		header:    live.header,
		toolAllowed: func(tool string) bool {
			return live.get().Tools.Allowed(tool)
		},
		connectTimeout: time.Duration(ep.Options.ConnectTimeout),
	}
	if ep.Auth == store.AuthOAuth {
		o := oauth.options(ep.URL, ep.Name)
		o.Store = auth.NewKeyringStore(st, ep.ID)
		cfg.oauth = &o
	}
	var pub *store.StatusPublisher
	if dir, err := store.DefaultStateDir(); err == nil {
		pub = store.NewStatusPublisher(dir, ep.Name, log)
		cfg.observer = statusObserver{pub}
	} else {
		log.Warn("status will not be published", "err", err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	cfg.start = func(r *bridge.Relay) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.WatchEndpoint(watchCtx, ep.ID, func(next store.Endpoint, err error) {
				applyEndpointChange(watchCtx, r, live, next, err, log)
			})
		}()
	}
	cleanup := func() {
		stopWatch()
		wg.Wait()
		if pub != nil {
			pub.Close()
		}
	}
	return cfg, cleanup, ExitOK
}

// applyEndpointChange applies a config change to a running bridge.
func applyEndpointChange(ctx context.Context, r *bridge.Relay, live *liveEndpoint, next store.Endpoint, err error, log *slog.Logger) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		log.Error("the endpoint was removed from the config; stopping")
		r.Stop(fmt.Errorf("the endpoint %q was removed from mcpbridge's config", live.get().Name))
		return
	case err != nil:
		log.Warn("config changed but cannot be used; keeping the current settings", "err", err)
		return
	}
	prev := live.get()
	live.set(next)
	switch {
	case next.URL != prev.URL && (next.Auth == store.AuthOAuth || prev.Auth == store.AuthOAuth):
		// OAuth tokens are bound to the server they were issued for: a new
		// URL needs a new sign-in, which a fresh start of the bridge does.
		r.Stop(fmt.Errorf("the URL of OAuth endpoint %q changed; restart the AI client's connection to sign in to the new server", next.Name))
	case next.URL != prev.URL:
		if _, err := bridge.ValidateURL(next.URL, next.Options.AllowHTTP); err != nil {
			log.Error("the endpoint's new URL is not usable; keeping the old one", "err", err)
			live.set(prev)
			return
		}
		log.Info("the endpoint's URL changed; starting a new session", "url", bridge.RedactURL(next.URL))
		if err := r.Retarget(ctx, next.URL); err != nil {
			log.Error("could not start a session at the new URL", "err", err)
		}
	case next.Options.CAFile != prev.Options.CAFile || next.Options.ConnectTimeout != prev.Options.ConnectTimeout:
		log.Warn("connection options changed; they apply when the AI client restarts mcpbridge")
	default:
		log.Info("endpoint settings reloaded; they apply from the next request")
	}
}

// statusObserver publishes relay events as the bridge's status file.
type statusObserver struct{ p *store.StatusPublisher }

func (o statusObserver) State(s string, session bool) {
	o.p.SetSession(session)
	switch s {
	case "connecting":
		o.p.SetState(store.StateConnecting)
	case "connected":
		o.p.SetState(store.StateConnected)
	case "error":
		o.p.SetState(store.StateError)
	}
}
func (o statusObserver) Relayed(string)   { o.p.RequestRelayed() }
func (o statusObserver) Failed(err error) { o.p.Error(err) }

// userText is the message to show for err: the store's user-facing text
// when it has one.
func userText(err error) string {
	if msg, ok := store.UserMessage(err); ok {
		return msg
	}
	return err.Error()
}
