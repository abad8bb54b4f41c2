// Package auth signs the bridge in to MCP servers that use OAuth (the
// authorization rules A1-A9 of docs/protocol.md): protected resource and
// authorization server discovery, client registration, the authorization
// code flow with PKCE in the user's browser and a loopback callback, token
// refresh, and step-up on insufficient_scope.
//
// The bridge's HTTP client calls an Authorizer before each request and
// when a request is answered 401 or 403. Tokens live in a TokenStore (the
// OS keyring in production) and never reach logs.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// Authorizer supplies and renews credentials. Methods may be called
// concurrently.
type Authorizer interface {
	// Authorization returns the Authorization header value for the next
	// request ("" for none).
	Authorization(ctx context.Context) (string, error)
	// Unauthorized is given a 401 or 403 response (body unread). Return nil
	// once new credentials are in place and the request should be sent
	// again.
	Unauthorized(ctx context.Context, resp *http.Response) error
}

// Sentinels for states callers branch on. Errors that carry them are often
// *store.UserError too, with text for people (store.UserMessage).
var (
	// ErrInteractionRequired: signing in needs the user's browser, and
	// Options.Interactive is false.
	ErrInteractionRequired = errors.New("oauth: sign-in required")
	// ErrMetadata: the server's or the authorization server's metadata is
	// missing, does not match, or lacks what sign-in needs.
	ErrMetadata = errors.New("oauth: unusable metadata")
	// ErrRegistration: no way to get a client id at the authorization server.
	ErrRegistration = errors.New("oauth: no client registration")
	// ErrCallback: the browser came back with an error, a wrong state or a
	// wrong issuer, or did not come back in time.
	ErrCallback = errors.New("oauth: authorization failed")
	// ErrScopeLimit: the server kept answering insufficient_scope.
	ErrScopeLimit = errors.New("oauth: insufficient scope after repeated sign-in")
	// ErrForbidden: a 403 that new credentials cannot fix.
	ErrForbidden = errors.New("oauth: forbidden")
)

// DefaultCallbackTimeout bounds the wait for the browser to come back.
const DefaultCallbackTimeout = 5 * time.Minute

// maxStepUps bounds sign-ins for the same insufficient_scope challenge (A6).
const maxStepUps = 3

// Options configures an OAuth.
type Options struct {
	// ServerURL is the MCP endpoint. Required.
	ServerURL string
	// HTTPClient sends discovery, registration and token requests. Nil means
	// a client with a 30 s timeout.
	HTTPClient *http.Client
	// Logger receives diagnostics; tokens, codes and verifiers are never
	// logged. Nil discards.
	Logger *slog.Logger
	// Store keeps the credentials. Nil means a MemoryStore (nothing survives
	// the process).
	Store TokenStore
	// OpenBrowser shows url to the user. Nil means OpenURL ($BROWSER, else
	// the desktop's opener), whose output never reaches our stdout.
	OpenBrowser func(url string) error
	// ClientName is the client_name sent in dynamic registration. Default
	// "mcpbridge".
	ClientName string
	// ClientID and ClientSecret are a pre-registered client, used in
	// preference to any registration.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is the https URL of a Client ID Metadata Document
	// describing this client; used when the authorization server supports
	// them. Empty skips that method.
	ClientMetadataURL string
	// Scopes, if set, are asked for instead of the scopes the server
	// suggests.
	Scopes []string
	// CallbackPort is the loopback port of the redirect URI. 0 means the port
	// of the stored registration if free, else a random one.
	CallbackPort int
	// CallbackTimeout bounds the wait for the browser. Default
	// DefaultCallbackTimeout.
	CallbackTimeout time.Duration
	// Interactive lets Unauthorized open the browser. When false (a headless
	// relay) a sign-in that needs the user fails with ErrInteractionRequired
	// and asks for `mcpbridge auth login NAME`. Login is always interactive.
	Interactive bool
	// EndpointName is the endpoint's name in messages to the user.
	EndpointName string
}

// OAuth is an Authorizer that signs in with OAuth 2.1 as MCP specifies. It
// is safe for concurrent use; one sign-in or refresh runs at a time and
// callers waiting for it reuse its result.
type OAuth struct {
	opts Options
	hc   *http.Client
	log  *slog.Logger

	// sem serialises loading, refreshing and signing in.
	sem chan struct{}

	mu     sync.Mutex // guards the fields below
	loaded bool
	creds  *Credentials
	// lastScopes is the scope set of the last sign-in, attempts how many
	// sign-ins in a row asked for it (bounds step-up, A6).
	lastScopes string
	attempts   int
}

var _ Authorizer = (*OAuth)(nil)

// New returns an OAuth for opts.ServerURL. It does nothing until used.
func New(opts Options) *OAuth {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Store == nil {
		opts.Store = &MemoryStore{}
	}
	if opts.OpenBrowser == nil {
		opts.OpenBrowser = func(u string) error { return OpenURL(u, log) }
	}
	if opts.ClientName == "" {
		opts.ClientName = "mcpbridge"
	}
	if opts.CallbackTimeout <= 0 {
		opts.CallbackTimeout = DefaultCallbackTimeout
	}
	return &OAuth{opts: opts, hc: hc, log: log, sem: make(chan struct{}, 1)}
}

func (o *OAuth) acquire(ctx context.Context) error {
	select {
	case o.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o *OAuth) release() { <-o.sem }

// header returns the Authorization value of the current token while it
// has not expired.
func (o *OAuth) header() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.creds == nil || o.creds.Token == nil || o.creds.Token.AccessToken == "" {
		return "", false
	}
	if t := o.creds.Token.Expiry; !t.IsZero() && !time.Now().Before(t) {
		return "", false
	}
	return "Bearer " + o.creds.Token.AccessToken, true
}

// fresh returns the Authorization value of the current token unless it is
// about to expire (oauth2's margin), when it is better refreshed first.
func (o *OAuth) fresh() (string, bool) {
	o.mu.Lock()
	ok := o.creds != nil && o.creds.Token.Valid()
	o.mu.Unlock()
	if !ok {
		return "", false
	}
	return o.header()
}

// snapshot returns a copy of the current credentials (never nil).
func (o *OAuth) snapshot() *Credentials {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.creds.clone()
}

// ensureLoaded reads the store once. Call with sem held.
func (o *OAuth) ensureLoaded(ctx context.Context) error {
	o.mu.Lock()
	loaded := o.loaded
	o.mu.Unlock()
	if loaded {
		return nil
	}
	c, err := o.opts.Store.Load(ctx)
	if err != nil {
		return fmt.Errorf("loading the sign-in: %w", err)
	}
	if c == nil {
		c = &Credentials{}
	}
	if c.Token != nil && c.Resource != "" {
		// A token is sent only to the server it was issued for (A9): the
		// endpoint's URL may have changed since.
		if u, err := url.Parse(o.opts.ServerURL); err != nil || !resourceMatches(c.Resource, u) {
			o.log.Info("oauth: stored token is for another server; signing in again", "resource", c.Resource)
			c.Token = nil
		}
	}
	o.mu.Lock()
	o.creds, o.loaded = c, true
	o.mu.Unlock()
	return nil
}

// commit makes c the current credentials and stores them. A store failure
// leaves them in use in memory.
func (o *OAuth) commit(ctx context.Context, c *Credentials) error {
	o.mu.Lock()
	o.creds, o.loaded = c.clone(), true
	o.mu.Unlock()
	if err := o.opts.Store.Save(ctx, c); err != nil {
		o.log.Warn("oauth: the sign-in could not be stored; it lasts until the bridge exits", "err", err)
		return fmt.Errorf("storing the sign-in: %w", err)
	}
	return nil
}

// Authorization implements Authorizer. It returns "" when not signed in (the
// server's 401 then starts a sign-in through Unauthorized) and refreshes an
// expired token first.
func (o *OAuth) Authorization(ctx context.Context) (string, error) {
	if h, ok := o.fresh(); ok {
		return h, nil
	}
	if err := o.acquire(ctx); err != nil {
		return "", err
	}
	defer o.release()
	if err := o.ensureLoaded(ctx); err != nil {
		return "", err
	}
	if h, ok := o.fresh(); ok {
		return h, nil
	}
	if c := o.snapshot(); c.Token != nil && c.Token.RefreshToken != "" {
		if err := o.refresh(ctx, c); err != nil {
			// The token may still work for a few seconds; if not, the
			// server's 401 brings a new sign-in.
			o.log.Info("oauth: token refresh failed", "err", err)
		}
	}
	h, _ := o.header()
	return h, nil
}

// Unauthorized implements Authorizer. On 401 it refreshes the token the
// request carried, or signs in again; on 403 insufficient_scope it signs in
// for the union of the granted and the challenged scopes, at most three
// times for the same scopes. Other 403s are ErrForbidden. Concurrent calls
// for the same rejected token share one sign-in.
func (o *OAuth) Unauthorized(ctx context.Context, resp *http.Response) error {
	ch := parseChallenge(resp.Header)
	var used string
	if resp.Request != nil {
		used = resp.Request.Header.Get("Authorization")
	}
	stepUp := resp.StatusCode == http.StatusForbidden && ch.err == "insufficient_scope"
	if resp.StatusCode == http.StatusForbidden && !stepUp {
		return fmt.Errorf("%w: the server answered %s", ErrForbidden, resp.Status)
	}
	if err := o.acquire(ctx); err != nil {
		return err
	}
	defer o.release()
	if err := o.ensureLoaded(ctx); err != nil {
		return err
	}
	if h, ok := o.header(); ok && h != used {
		return nil // renewed while this request was out
	}
	c := o.snapshot()
	if stepUp {
		have := c.Scopes
		if c.Token == nil {
			have = o.opts.Scopes
		}
		scopes := union(have, strings.Fields(ch.scope))
		key := strings.Join(scopes, " ")
		o.mu.Lock()
		n := 0
		if key == o.lastScopes {
			n = o.attempts
		}
		o.mu.Unlock()
		if n >= maxStepUps {
			return &store.UserError{
				Msg: fmt.Sprintf("The server still refuses with insufficient scope after %d sign-ins for %q.", n, key),
				Err: fmt.Errorf("%w: scopes %q", ErrScopeLimit, key),
			}
		}
		o.log.Info("oauth: the server wants more scope; signing in again", "scope", key)
		return o.signInLogged(ctx, ch, scopes, true, o.opts.Interactive)
	}
	if used != "" && c.Token != nil && c.Token.RefreshToken != "" {
		err := o.refresh(ctx, c)
		if err == nil {
			return nil
		}
		o.log.Info("oauth: token refresh failed; signing in again", "err", err)
	}
	return o.signInLogged(ctx, ch, strings.Fields(ch.scope), false, o.opts.Interactive)
}

// countAttempt records a sign-in for scopes.
func (o *OAuth) countAttempt(scopes []string) {
	key := strings.Join(union(nil, scopes), " ")
	o.mu.Lock()
	if key == o.lastScopes {
		o.attempts++
	} else {
		o.lastScopes, o.attempts = key, 1
	}
	o.mu.Unlock()
}

// signInLogged signs in; a token that could not be stored is still used.
func (o *OAuth) signInLogged(ctx context.Context, ch challenge, scopes []string, exact, interactive bool) error {
	err := o.signIn(ctx, ch, scopes, exact, interactive)
	var se *saveError
	if errors.As(err, &se) {
		return nil // logged by commit; the token is in memory
	}
	return err
}

// Login signs in now, opening the browser whatever Options.Interactive
// says: for `mcpbridge auth login NAME` and the tray's Sign in. It fails if
// the sign-in cannot be stored.
func (o *OAuth) Login(ctx context.Context) error {
	if err := o.acquire(ctx); err != nil {
		return err
	}
	defer o.release()
	if err := o.ensureLoaded(ctx); err != nil {
		return err
	}
	o.mu.Lock()
	o.lastScopes, o.attempts = "", 0 // a person asked: start counting again
	o.mu.Unlock()
	err := o.signIn(ctx, challenge{}, nil, false, true)
	var se *saveError
	if errors.As(err, &se) {
		return se.err
	}
	return err
}

// Logout forgets the token set (client registrations are kept, so the next
// sign-in does not register again).
func (o *OAuth) Logout(ctx context.Context) error {
	if err := o.acquire(ctx); err != nil {
		return err
	}
	defer o.release()
	if err := o.ensureLoaded(ctx); err != nil {
		return err
	}
	c := o.snapshot()
	c.Token, c.Scopes, c.Issuer, c.Resource, c.TokenURL = nil, nil, "", "", ""
	return o.commit(ctx, c)
}

// SignedIn reports whether a token set is held (it may be expired but
// refreshable). It reads the store on first use.
func (o *OAuth) SignedIn(ctx context.Context) (bool, error) {
	if err := o.acquire(ctx); err != nil {
		return false, err
	}
	defer o.release()
	if err := o.ensureLoaded(ctx); err != nil {
		return false, err
	}
	c := o.snapshot()
	return c.Token != nil && (c.Token.Valid() || c.Token.RefreshToken != ""), nil
}

// saveError marks a sign-in that worked but could not be stored.
type saveError struct{ err error }

func (e *saveError) Error() string { return e.err.Error() }
func (e *saveError) Unwrap() error { return e.err }

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
