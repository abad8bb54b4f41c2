package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAS is an authorization server in httptest: metadata, dynamic
// registration, an authorize endpoint that approves at once, and a token
// endpoint that checks PKCE and the resource.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// Knobs, set before use.
	issuer       string   // the metadata's issuer; "" means the real one
	methods      []string // code_challenge_methods_supported; nil omits it
	iss          string   // the iss in the callback: "" the issuer, "-" none
	advertiseIss bool
	wrongState   bool
	refreshFails bool
	expiresIn    int    // seconds; 0 means 3600
	withhold     string // a scope never granted
	wantResource string

	// Records.
	registrations []map[string]any
	authorizes    []url.Values
	tokenReqs     []url.Values
	secrets       []string // every code, token and verifier seen
	codes         map[string]url.Values
	access        map[string][]string // token -> scopes
	refresh       map[string][]string
	n             int
}

func newFakeAS(t *testing.T) *fakeAS {
	a := &fakeAS{t: t, methods: []string{"S256"}, codes: map[string]url.Values{}, access: map[string][]string{}, refresh: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAS) URL() string { return a.srv.URL }

func (a *fakeAS) metadata(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	iss := a.issuer
	if iss == "" {
		iss = a.URL()
	}
	m := map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                a.URL() + "/authorize",
		"token_endpoint":                        a.URL() + "/token",
		"registration_endpoint":                 a.URL() + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported": []string{"none"},
	}
	if a.methods != nil {
		m["code_challenge_methods_supported"] = a.methods
	}
	if a.advertiseIss {
		m["authorization_response_iss_parameter_supported"] = true
	}
	writeJSON(w, 200, m)
}

func (a *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.registrations = append(a.registrations, req)
	writeJSON(w, 201, map[string]any{"client_id": fmt.Sprintf("client-%d", len(a.registrations)), "redirect_uris": req["redirect_uris"], "token_endpoint_auth_method": "none"})
}

func (a *fakeAS) next(prefix string) string {
	a.n++
	s := fmt.Sprintf("%s-%d-%s", prefix, a.n, rand.Text())
	a.secrets = append(a.secrets, s)
	return s
}

func (a *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.authorizes = append(a.authorizes, q)
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", 400)
		return
	}
	code := a.next("code")
	a.codes[code] = q
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Hostname() != "127.0.0.1" {
		http.Error(w, "bad redirect_uri", 400)
		return
	}
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	if a.wrongState {
		v.Set("state", "forged")
	}
	switch a.iss {
	case "":
		v.Set("iss", a.URL())
	case "-":
	default:
		v.Set("iss", a.iss)
	}
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (a *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokenReqs = append(a.tokenReqs, f)
	fail := func(code string) { writeJSON(w, 400, map[string]string{"error": code}) }
	if a.wantResource != "" && f.Get("resource") != a.wantResource {
		fail("invalid_target")
		return
	}
	var scopes []string
	switch f.Get("grant_type") {
	case "authorization_code":
		q, ok := a.codes[f.Get("code")]
		delete(a.codes, f.Get("code"))
		if !ok || q.Get("client_id") != f.Get("client_id") || q.Get("redirect_uri") != f.Get("redirect_uri") || q.Get("resource") != f.Get("resource") {
			fail("invalid_grant")
			return
		}
		a.secrets = append(a.secrets, f.Get("code_verifier"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") {
			fail("invalid_grant")
			return
		}
		scopes = strings.Fields(q.Get("scope"))
	case "refresh_token":
		s, ok := a.refresh[f.Get("refresh_token")]
		if !ok || a.refreshFails {
			fail("invalid_grant")
			return
		}
		delete(a.refresh, f.Get("refresh_token"))
		scopes = s
	default:
		fail("unsupported_grant_type")
		return
	}
	scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == a.withhold })
	at, rt := a.next("access"), a.next("refresh")
	a.access[at], a.refresh[rt] = scopes, scopes
	exp := a.expiresIn
	if exp == 0 {
		exp = 3600
	}
	writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": exp, "scope": strings.Join(scopes, " ")})
}

// scopesOf returns the scopes of a valid access token.
func (a *fakeAS) scopesOf(token string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.access[token]
	return s, ok
}

func (a *fakeAS) revokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.access)
}

func (a *fakeAS) set(f func(a *fakeAS)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func (a *fakeAS) counts() (registrations, authorizes, tokens int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.registrations), len(a.authorizes), len(a.tokenReqs)
}

// fakeMCP is a protected resource: PRM at the path-aware location and an
// /mcp endpoint that answers 401 until it gets a valid bearer token with
// the required scopes.
type fakeMCP struct {
	srv *httptest.Server
	as  *fakeAS

	mu        sync.Mutex
	resource  string // the PRM's resource; "" means the endpoint URL
	scopes    []string
	challenge string   // scope in the 401 challenge
	required  []string // scopes needed, else 403 insufficient_scope
	bearers   []string
}

func newFakeMCP(t *testing.T, as *fakeAS) *fakeMCP {
	m := &fakeMCP{as: as}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		res := m.resource
		if res == "" {
			res = m.URL()
		}
		writeJSON(w, 200, map[string]any{"resource": res, "authorization_servers": []string{as.URL()}, "scopes_supported": m.scopes})
	})
	mux.HandleFunc("POST /mcp", m.serve)
	m.srv = httptest.NewServer(mux)
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeMCP) URL() string { return m.srv.URL + "/mcp" }

func (m *fakeMCP) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := r.Header.Get("Authorization")
	m.bearers = append(m.bearers, h)
	tok, _ := strings.CutPrefix(h, "Bearer ")
	scopes, ok := m.as.scopesOf(tok)
	if !ok {
		c := fmt.Sprintf(`Bearer error="invalid_token", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, m.srv.URL)
		if m.challenge != "" {
			c += fmt.Sprintf(`, scope="%s"`, m.challenge)
		}
		w.Header().Set("WWW-Authenticate", c)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	for _, s := range m.required {
		if !slices.Contains(scopes, s) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, strings.Join(m.required, " "), m.srv.URL))
			w.WriteHeader(http.StatusForbidden)
			return
		}
	}
	writeJSON(w, 200, map[string]bool{"ok": true})
}

func (m *fakeMCP) set(f func(m *fakeMCP)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// browser plays the user's browser: it follows the authorization URL's
// redirects to the loopback callback.
func browser(t *testing.T) func(string) error {
	return func(u string) error {
		resp, err := http.Get(u)
		if err != nil {
			t.Errorf("browser: %v", err)
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
}

// call plays the bridge's HTTP client: it POSTs to the endpoint with the
// Authorizer's header, hands a 401 or 403 to Unauthorized and sends again
// while that returns nil, up to tries times.
func call(ctx context.Context, a Authorizer, endpoint string, tries int) error {
	for range tries {
		h, err := a.Authorization(ctx)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return nil
		case http.StatusUnauthorized, http.StatusForbidden:
			if err := a.Unauthorized(ctx, resp); err != nil {
				return err
			}
		default:
			return fmt.Errorf("status %s", resp.Status)
		}
	}
	return fmt.Errorf("still unauthorized after %d tries", tries)
}
