package auth

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type env struct {
	as   *fakeAS
	mcp  *fakeMCP
	logs *syncBuffer
	ts   *MemoryStore
}

func newEnv(t *testing.T) *env {
	as := newFakeAS(t)
	return &env{as: as, mcp: newFakeMCP(t, as), logs: &syncBuffer{}, ts: &MemoryStore{}}
}

func (e *env) oauth(t *testing.T, mod ...func(*Options)) *OAuth {
	opts := Options{
		ServerURL:       e.mcp.URL(),
		Logger:          slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Store:           e.ts,
		OpenBrowser:     browser(t),
		Interactive:     true,
		CallbackTimeout: time.Minute,
		EndpointName:    "work",
	}
	for _, m := range mod {
		m(&opts)
	}
	return New(opts)
}

// checkLogs fails if any code, token or verifier the server issued or saw
// is in the logs.
func (e *env) checkLogs(t *testing.T) {
	t.Helper()
	e.as.mu.Lock()
	secrets := append([]string(nil), e.as.secrets...)
	e.as.mu.Unlock()
	logs := e.logs.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(logs, s) {
			t.Errorf("a secret (%.6s…) is in the logs", s)
		}
	}
}

func TestFullFlow(t *testing.T) {
	e := newEnv(t)
	e.mcp.set(func(m *fakeMCP) { m.scopes = []string{"read", "write"} })
	e.as.set(func(a *fakeAS) { a.wantResource = e.mcp.URL() })
	o := e.oauth(t)
	ctx := t.Context()
	if h, err := o.Authorization(ctx); err != nil || h != "" {
		t.Fatalf("Authorization before sign-in = %q, %v; want empty", h, err)
	}
	if err := call(ctx, o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	regs, auths, toks := e.as.counts()
	if regs != 1 || auths != 1 || toks != 1 {
		t.Fatalf("registrations, authorizes, token requests = %d, %d, %d; want 1 each", regs, auths, toks)
	}
	reg := e.as.registrations[0]
	if reg["application_type"] != "native" {
		t.Errorf("application_type = %v, want native", reg["application_type"])
	}
	ru, _ := reg["redirect_uris"].([]any)
	if len(ru) != 1 || !strings.HasPrefix(ru[0].(string), "http://127.0.0.1:") || !strings.HasSuffix(ru[0].(string), "/callback") {
		t.Errorf("redirect_uris = %v, want one loopback callback", ru)
	}
	q := e.as.authorizes[0]
	if q.Get("resource") != e.mcp.URL() {
		t.Errorf("authorize resource = %q, want %q", q.Get("resource"), e.mcp.URL())
	}
	if q.Get("scope") != "read write" {
		t.Errorf("authorize scope = %q, want the PRM's scopes_supported", q.Get("scope"))
	}
	if q.Get("state") == "" || q.Get("code_challenge_method") != "S256" {
		t.Errorf("authorize lacks state or S256: %v", q)
	}
	// A later request carries the token; a second call signs in no more.
	if err := call(ctx, o, e.mcp.URL(), 1); err != nil {
		t.Fatal(err)
	}
	c, _ := e.ts.Load(ctx)
	if c == nil || c.Token == nil || c.Token.RefreshToken == "" || c.Clients[e.as.URL()].ID != "client-1" {
		t.Fatalf("stored credentials incomplete: %+v", c)
	}
	e.checkLogs(t)
}

func TestChallengeScopeWins(t *testing.T) {
	e := newEnv(t)
	e.mcp.set(func(m *fakeMCP) { m.scopes = []string{"read", "write"}; m.challenge = "read" })
	o := e.oauth(t)
	if err := call(t.Context(), o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	if got := e.as.authorizes[0].Get("scope"); got != "read" {
		t.Errorf("scope = %q, want the challenge's %q", got, "read")
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		want  error
	}{
		{"PRM resource mismatch", func(e *env) { e.mcp.set(func(m *fakeMCP) { m.resource = "https://elsewhere.example/mcp" }) }, ErrMetadata},
		{"issuer mismatch", func(e *env) { e.as.set(func(a *fakeAS) { a.issuer = "https://evil.example" }) }, ErrMetadata},
		{"no S256", func(e *env) { e.as.set(func(a *fakeAS) { a.methods = []string{"plain"} }) }, ErrMetadata},
		{"no code_challenge_methods_supported", func(e *env) { e.as.set(func(a *fakeAS) { a.methods = nil }) }, ErrMetadata},
		{"state mismatch", func(e *env) { e.as.set(func(a *fakeAS) { a.wrongState = true }) }, ErrCallback},
		{"iss mismatch", func(e *env) { e.as.set(func(a *fakeAS) { a.iss = "https://evil.example" }) }, ErrCallback},
		{"iss missing though advertised", func(e *env) { e.as.set(func(a *fakeAS) { a.iss = "-"; a.advertiseIss = true }) }, ErrCallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			err := call(t.Context(), e.oauth(t), e.mcp.URL(), 3)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			_, _, toks := e.as.counts()
			if toks != 0 {
				t.Errorf("%d token requests after a refusal, want 0", toks)
			}
		})
	}
}

func TestIssAbsentAllowedWhenNotAdvertised(t *testing.T) {
	e := newEnv(t)
	e.as.set(func(a *fakeAS) { a.iss = "-" })
	if err := call(t.Context(), e.oauth(t), e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
}

func TestRefreshOnExpiry(t *testing.T) {
	e := newEnv(t)
	e.as.set(func(a *fakeAS) { a.wantResource = e.mcp.URL() })
	o := e.oauth(t)
	ctx := t.Context()
	if err := call(ctx, o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	// Time passes: the token expires.
	o.mu.Lock()
	first := o.creds.Token.AccessToken
	o.creds.Token.Expiry = time.Now().Add(-time.Minute)
	o.mu.Unlock()
	h, err := o.Authorization(ctx)
	if err != nil || h == "" || h == "Bearer "+first {
		t.Fatalf("Authorization after expiry = %q, %v; want a refreshed token", h, err)
	}
	_, auths, toks := e.as.counts()
	if auths != 1 || toks != 2 {
		t.Fatalf("authorizes, token requests = %d, %d; want 1, 2", auths, toks)
	}
	if f := e.as.tokenReqs[1]; f.Get("grant_type") != "refresh_token" || f.Get("resource") != e.mcp.URL() {
		t.Errorf("refresh request = %v, want refresh_token with resource", f)
	}
	e.checkLogs(t)
}

func TestRefreshOn401(t *testing.T) {
	e := newEnv(t)
	o := e.oauth(t)
	ctx := t.Context()
	if err := call(ctx, o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	e.as.revokeAll()
	if err := call(ctx, o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	_, auths, toks := e.as.counts()
	if auths != 1 || toks != 2 {
		t.Fatalf("authorizes, token requests = %d, %d; want 1, 2 (one refresh)", auths, toks)
	}
}

func TestReauthorizeWhenRefreshFails(t *testing.T) {
	e := newEnv(t)
	o := e.oauth(t)
	ctx := t.Context()
	if err := call(ctx, o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	e.as.revokeAll()
	e.as.set(func(a *fakeAS) { a.refreshFails = true })
	if err := call(ctx, o, e.mcp.URL(), 3); err != nil {
		t.Fatal(err)
	}
	regs, auths, toks := e.as.counts()
	if regs != 1 || auths != 2 || toks != 3 {
		t.Fatalf("registrations, authorizes, token requests = %d, %d, %d; want 1, 2, 3", regs, auths, toks)
	}
	e.checkLogs(t)
}

func TestStepUpBounded(t *testing.T) {
	e := newEnv(t)
	e.mcp.set(func(m *fakeMCP) { m.scopes = []string{"read"}; m.required = []string{"admin", "read"} })
	e.as.set(func(a *fakeAS) { a.withhold = "admin" })
	o := e.oauth(t)
	err := call(t.Context(), o, e.mcp.URL(), 10)
	if !errors.Is(err, ErrScopeLimit) {
		t.Fatalf("err = %v, want ErrScopeLimit", err)
	}
	_, auths, _ := e.as.counts()
	if auths != 1+maxStepUps {
		t.Fatalf("%d authorizes, want 1 + %d step-ups", auths, maxStepUps)
	}
	if got := e.as.authorizes[1].Get("scope"); got != "admin read" {
		t.Errorf("step-up scope = %q, want the union %q", got, "admin read")
	}
	if _, ok := store.UserMessage(err); !ok {
		t.Errorf("no user message in %v", err)
	}
}

// The conformance suite's auth/scope-retry-limit: the challenge's scope is
// never granted; three authorizations in all, counting the first.
func TestStepUpSameScopeBounded(t *testing.T) {
	e := newEnv(t)
	e.mcp.set(func(m *fakeMCP) { m.challenge = "admin"; m.required = []string{"admin"} })
	e.as.set(func(a *fakeAS) { a.withhold = "admin" })
	err := call(t.Context(), e.oauth(t), e.mcp.URL(), 10)
	if !errors.Is(err, ErrScopeLimit) {
		t.Fatalf("err = %v, want ErrScopeLimit", err)
	}
	if _, auths, _ := e.as.counts(); auths != maxStepUps {
		t.Fatalf("%d authorizes, want %d", auths, maxStepUps)
	}
}

func TestStepUpGranted(t *testing.T) {
	e := newEnv(t)
	e.mcp.set(func(m *fakeMCP) { m.scopes = []string{"read"}; m.required = []string{"admin", "read"} })
	o := e.oauth(t)
	if err := call(t.Context(), o, e.mcp.URL(), 5); err != nil {
		t.Fatal(err)
	}
	_, auths, _ := e.as.counts()
	if auths != 2 {
		t.Fatalf("%d authorizes, want 2", auths)
	}
}

func TestConcurrentUnauthorizedSignInOnce(t *testing.T) {
	e := newEnv(t)
	o := e.oauth(t)
	ctx := t.Context()
	// Every request goes out without a token and comes back 401.
	var resps []*http.Response
	for range 8 {
		resp, err := http.Post(e.mcp.URL(), "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resps = append(resps, resp)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(resps))
	for i, resp := range resps {
		wg.Go(func() { errs[i] = o.Unauthorized(ctx, resp) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	regs, auths, toks := e.as.counts()
	if regs != 1 || auths != 1 || toks != 1 {
		t.Fatalf("registrations, authorizes, token requests = %d, %d, %d; want 1 each", regs, auths, toks)
	}
	if err := call(ctx, o, e.mcp.URL(), 1); err != nil {
		t.Fatal(err)
	}
}

func TestHeadlessAsksForLogin(t *testing.T) {
	e := newEnv(t)
	o := e.oauth(t, func(o *Options) { o.Interactive = false })
	err := call(t.Context(), o, e.mcp.URL(), 3)
	if !errors.Is(err, ErrInteractionRequired) {
		t.Fatalf("err = %v, want ErrInteractionRequired", err)
	}
	msg, _ := store.UserMessage(err)
	if !strings.Contains(msg, "mcpbridge auth login work") {
		t.Errorf("message %q does not say how to sign in", msg)
	}
	// Login signs in regardless; then the headless relay works.
	if err := o.Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := call(t.Context(), o, e.mcp.URL(), 1); err != nil {
		t.Fatal(err)
	}
}

func TestLoginLogout(t *testing.T) {
	e := newEnv(t)
	e.mcp.set(func(m *fakeMCP) { m.scopes = []string{"read"} })
	o := e.oauth(t)
	ctx := t.Context()
	if err := o.Login(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := o.SignedIn(ctx); !in {
		t.Fatal("not signed in after Login")
	}
	// A new OAuth on the same store (a restarted relay) uses the token.
	o2 := e.oauth(t, func(o *Options) { o.Interactive = false })
	if err := call(ctx, o2, e.mcp.URL(), 1); err != nil {
		t.Fatal(err)
	}
	if err := o.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := o.SignedIn(ctx); in {
		t.Fatal("signed in after Logout")
	}
	c, _ := e.ts.Load(ctx)
	if c.Token != nil || c.Clients[e.as.URL()].ID == "" {
		t.Fatalf("after Logout: %+v; want no token, registration kept", c)
	}
	// Signing in again reuses the registration when the port is free.
	if err := o.Login(ctx); err != nil {
		t.Fatal(err)
	}
	regs, _, _ := e.as.counts()
	if regs != 1 {
		t.Errorf("%d registrations, want 1", regs)
	}
	e.checkLogs(t)
}

func TestStoredTokenForOtherServerNotSent(t *testing.T) {
	e := newEnv(t)
	o := e.oauth(t)
	if err := o.Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	other := e.oauth(t, func(o *Options) { o.ServerURL = "https://other.example/mcp" })
	if h, err := other.Authorization(t.Context()); err != nil || h != "" {
		t.Fatalf("Authorization for another server = %q, %v; want none", h, err)
	}
}

func TestCallbackTimeout(t *testing.T) {
	e := newEnv(t)
	o := e.oauth(t, func(o *Options) {
		o.CallbackTimeout = time.Millisecond
		o.OpenBrowser = func(string) error { return errors.New("no browser") }
	})
	err := o.Login(t.Context())
	if !errors.Is(err, ErrCallback) {
		t.Fatalf("err = %v, want ErrCallback", err)
	}
}

func TestForbiddenWithoutScopeIsNotRetried(t *testing.T) {
	o := New(Options{ServerURL: "http://127.0.0.1:1/mcp"})
	resp := &http.Response{StatusCode: 403, Status: "403 Forbidden", Header: http.Header{}, Request: &http.Request{Header: http.Header{}, URL: &url.URL{}}}
	if err := o.Unauthorized(t.Context(), resp); !errors.Is(err, ErrForbidden) {
		t.Fatalf("err = %v, want ErrForbidden", err)
	}
}
