package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// signIn runs discovery, registration and the authorization code flow, and
// commits the new token set. The scopes asked for are scopes when exact
// (a step-up), else Options.Scopes, the challenge's scopes, or the
// server's scopes_supported (A6). Call with sem held. A token that works
// but could not be stored is a *saveError.
func (o *OAuth) signIn(ctx context.Context, ch challenge, scopes []string, exact, interactive bool) error {
	if !interactive {
		name := o.opts.EndpointName
		if name == "" {
			name = "NAME"
		}
		return &store.UserError{
			Msg: fmt.Sprintf("%s needs you to sign in; run `mcpbridge auth login %s` (or use Sign in in the tray), then try again.", o.opts.ServerURL, name),
			Err: ErrInteractionRequired,
		}
	}
	prm, err := o.fetchResourceMetadata(ctx, ch)
	if err != nil {
		return err
	}
	var issuer, resource string
	if prm != nil {
		issuer, resource = prm.AuthorizationServers[0], prm.Resource
	} else {
		// No protected resource metadata: a 2025-03-26 server, whose origin
		// is its authorization server.
		u, err := url.Parse(o.opts.ServerURL)
		if err != nil {
			return fmt.Errorf("server URL: %w", err)
		}
		issuer, resource = u.Scheme+"://"+u.Host, canonicalResource(o.opts.ServerURL)
		o.log.Info("oauth: the server publishes no protected resource metadata; trying its origin as the authorization server", "issuer", issuer)
	}
	meta, err := o.fetchServerMetadata(ctx, issuer)
	if err != nil {
		return err
	}
	switch {
	case exact:
	case len(o.opts.Scopes) > 0:
		scopes = o.opts.Scopes
	case len(scopes) > 0:
	case prm != nil && len(prm.ScopesSupported) > 0:
		scopes = prm.ScopesSupported
	}
	o.countAttempt(scopes)

	c := o.snapshot()
	ln, err := o.listen(c.Clients[issuer])
	if err != nil {
		return err
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	client, err := o.client(ctx, meta, c.Clients[issuer], redirect)
	if err != nil {
		return err
	}
	cfg := o.config(client, meta.AuthorizationEndpoint, meta.TokenEndpoint, redirect, scopes)

	state := oauth2.GenerateVerifier()
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL(state,
		oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", resource))
	cb := &callback{state: state, issuer: meta.Issuer, issRequired: meta.IssParameterSupported, result: make(chan callbackResult, 1)}
	code, err := o.waitForCode(ctx, ln, cb, authURL)
	if err != nil {
		return err
	}

	tctx := context.WithValue(ctx, oauth2.HTTPClient, o.tokenClient(resource))
	tok, err := cfg.Exchange(tctx, code,
		oauth2.VerifierOption(verifier),
		oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return fmt.Errorf("%w: exchanging the authorization code: %w", ErrCallback, tokenErr(err))
	}
	o.log.Info("oauth: signed in", "issuer", issuer, "scopes", strings.Join(scopes, " "), "refreshable", tok.RefreshToken != "")
	if c.Clients == nil {
		c.Clients = map[string]Client{}
	}
	c.Clients[issuer] = client // the refresh needs it, whatever its origin
	c.Token, c.Issuer, c.Resource, c.TokenURL, c.Scopes = tok, issuer, resource, meta.TokenEndpoint, scopes
	if err := o.commit(ctx, c); err != nil {
		return &saveError{err}
	}
	return nil
}

// tokenErr keeps what an OAuth error response says and drops the raw body,
// which may hold tokens.
func tokenErr(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Errorf("%s %s (HTTP %d)", re.ErrorCode, re.ErrorDescription, re.Response.StatusCode)
		}
		return fmt.Errorf("token endpoint answered HTTP %d", re.Response.StatusCode)
	}
	return err
}

// config is the oauth2 configuration for client at an authorization server.
func (o *OAuth) config(client Client, authURL, tokenURL, redirect string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if client.AuthMethod == "client_secret_basic" {
		style = oauth2.AuthStyleInHeader
	}
	secret := client.Secret
	if client.AuthMethod == "none" {
		secret = ""
	}
	return &oauth2.Config{
		ClientID:     client.ID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style},
		RedirectURL:  redirect,
		Scopes:       scopes,
	}
}

// refresh renews c's token with its refresh token and commits it. Call with
// sem held.
func (o *OAuth) refresh(ctx context.Context, c *Credentials) error {
	if c.TokenURL == "" || c.Token == nil || c.Token.RefreshToken == "" {
		return errors.New("no refresh token")
	}
	client, ok := c.Clients[c.Issuer]
	if !ok {
		return errors.New("no client registration for the refresh")
	}
	cfg := o.config(client, "", c.TokenURL, "", nil)
	old := *c.Token
	old.Expiry = time.Unix(1, 0) // force the refresh: the server rejected it
	tctx := context.WithValue(ctx, oauth2.HTTPClient, o.tokenClient(c.Resource))
	tok, err := cfg.TokenSource(tctx, &old).Token()
	if err != nil {
		return tokenErr(err)
	}
	o.log.Debug("oauth: token refreshed", "issuer", c.Issuer)
	c.Token = tok
	if err := o.commit(ctx, c); err != nil {
		return nil // in use in memory; commit logged it
	}
	return nil
}

// tokenClient is the HTTP client for token requests: it adds the RFC 8707
// resource to requests that lack it (oauth2 has no option for refreshes).
func (o *OAuth) tokenClient(resource string) *http.Client {
	hc := *o.hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = resourceTransport{base: base, resource: resource}
	return &hc
}

type resourceTransport struct {
	base     http.RoundTripper
	resource string
}

func (t resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.resource == "" || req.Method != http.MethodPost || req.Body == nil ||
		!strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return t.base.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(b))
	if err == nil && !form.Has("resource") {
		form.Set("resource", t.resource)
		b = []byte(form.Encode())
	}
	r2 := req.Clone(req.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.ContentLength = int64(len(b))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return t.base.RoundTrip(r2)
}

// listen binds the loopback callback listener: Options.CallbackPort, else
// the port of the stored dynamic registration if it is free, else any.
func (o *OAuth) listen(stored Client) (net.Listener, error) {
	port := o.opts.CallbackPort
	if port == 0 && stored.Dynamic {
		if u, err := url.Parse(stored.RedirectURI); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil {
				if ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
					return ln, nil
				}
			}
		}
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, &store.UserError{
			Msg: fmt.Sprintf("Could not listen on 127.0.0.1:%d for the sign-in callback; free the port or choose another one.", port),
			Err: fmt.Errorf("callback listener: %w", err),
		}
	}
	return ln, nil
}

type callbackResult struct {
	code string
	err  error
}

// callback is the one-shot handler of the redirect back from the browser.
type callback struct {
	state       string
	issuer      string
	issRequired bool
	result      chan callbackResult // buffered 1; the first send wins
}

func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	res := cb.check(r.URL.Query())
	select {
	case cb.result <- res:
	default:
		res = callbackResult{err: errors.New("this sign-in is already finished")}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	title, text := "Signed in", "mcpbridge is signed in. You can close this window."
	if res.err != nil {
		w.WriteHeader(http.StatusBadRequest)
		title, text = "Sign-in failed", "mcpbridge could not sign in: "+res.err.Error()+". You can close this window."
	}
	fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body><h1>%s</h1><p>%s</p></body></html>",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}

// check validates the authorization response (A7, A8).
func (cb *callback) check(q url.Values) callbackResult {
	if q.Get("state") != cb.state {
		return callbackResult{err: fmt.Errorf("%w: the state parameter does not match", ErrCallback)}
	}
	if iss, ok := q["iss"]; ok {
		if len(iss) != 1 || iss[0] != cb.issuer {
			return callbackResult{err: fmt.Errorf("%w: the response comes from issuer %q, not %q", ErrCallback, q.Get("iss"), cb.issuer)}
		}
	} else if cb.issRequired {
		return callbackResult{err: fmt.Errorf("%w: the response lacks the iss parameter the server advertises", ErrCallback)}
	}
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return callbackResult{err: fmt.Errorf("%w: the authorization server said %s", ErrCallback, msg)}
	}
	code := q.Get("code")
	if code == "" {
		return callbackResult{err: fmt.Errorf("%w: no authorization code", ErrCallback)}
	}
	return callbackResult{code: code}
}

// waitForCode serves the callback on ln, opens the browser at authURL and
// waits for the code, the timeout or ctx.
func (o *OAuth) waitForCode(ctx context.Context, ln net.Listener, cb *callback, authURL string) (string, error) {
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		<-served
	}()

	o.log.Info("oauth: opening the browser to sign in", "callback", ln.Addr().String())
	if err := o.opts.OpenBrowser(authURL); err != nil {
		// The URL holds no secret (the PKCE challenge, not the verifier);
		// the user needs it to go on.
		o.log.Warn("oauth: could not open a browser; open this URL to sign in", "url", authURL, "err", err)
	}
	timer := time.NewTimer(o.opts.CallbackTimeout)
	defer timer.Stop()
	select {
	case res := <-cb.result:
		return res.code, res.err
	case <-timer.C:
		return "", &store.UserError{
			Msg: fmt.Sprintf("Sign-in was not completed in the browser within %s.", o.opts.CallbackTimeout),
			Err: fmt.Errorf("%w: no callback within %s", ErrCallback, o.opts.CallbackTimeout),
		}
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
