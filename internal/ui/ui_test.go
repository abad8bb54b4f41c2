package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"

	"github.com/mcpbridge/mcpbridge/internal/auth"
	"github.com/mcpbridge/mcpbridge/internal/bridge/demo"
	"github.com/mcpbridge/mcpbridge/internal/bridge/server"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

// harness is a UI on Fyne's test driver. Widget updates that the app
// would hand to fyne.Do are queued and run on the test goroutine, which
// plays the Fyne thread, so the race detector sees the same threading as
// the real app.
type harness struct {
	t        *testing.T
	u        *UI
	st       *store.Store
	dir      string
	stateDir string
	logDir   string
	q        chan func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	keyring.MockInit()
	a := test.NewTempApp(t)
	dir := t.TempDir()
	h := &harness{
		t:        t,
		dir:      dir,
		st:       store.New(filepath.Join(dir, "config"), nil),
		stateDir: filepath.Join(dir, "state"),
		logDir:   filepath.Join(dir, "logs"),
		q:        make(chan func(), 1000),
	}
	h.u = New(a, Options{
		Store:      h.st,
		StateDir:   h.stateDir,
		LogDir:     h.logDir,
		Executable: "/opt/mcpbridge/bin/mcpbridge",
		ClientConfigPath: func(client string) (string, error) {
			return filepath.Join(dir, client+".json"), nil
		},
	})
	h.u.do = func(f func()) { h.q <- f }
	h.u.now = func() time.Time { return time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC) }
	h.u.Window().Resize(fyne.NewSize(900, 700))
	h.u.Window().Show()
	t.Cleanup(h.settle)
	return h
}

// settle waits for async work and applies its widget updates.
func (h *harness) settle() {
	h.t.Helper()
	done := make(chan struct{})
	go func() { h.u.pending.Wait(); close(done) }()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case f := <-h.q:
			f()
		case <-done:
			for {
				select {
				case f := <-h.q:
					f()
				default:
					return
				}
			}
		case <-timeout:
			h.t.Fatal("async work did not finish")
		}
	}
}

// pump runs queued updates until cond holds.
func (h *harness) pump(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case f := <-h.q:
			f()
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// add stores an endpoint and shows the config as the watcher would.
func (h *harness) add(ep store.Endpoint) store.Endpoint {
	h.t.Helper()
	ep, err := h.st.Add(context.Background(), ep)
	if err != nil {
		h.t.Fatal(err)
	}
	cfg, err := h.st.Load()
	if err != nil {
		h.t.Fatal(err)
	}
	h.u.setConfig(cfg, nil)
	return ep
}

func (h *harness) selectByName(name string) {
	h.t.Helper()
	for i, r := range h.u.rows {
		if r.Endpoint.Name == name {
			h.u.w.list.Select(i)
			h.settle()
			return
		}
	}
	h.t.Fatalf("no row %q", name)
}

func enter(e fyne.Focusable) {
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}

func TestAddEndpointWithTheKeyboard(t *testing.T) {
	h := newHarness(t)
	h.u.openEditor(nil)
	e := h.u.editing
	if got := h.u.Window().Canvas().Focused(); got != e.name {
		t.Fatalf("focus is on %T, want the name field", got)
	}
	test.Type(e.name, "work")
	h.u.Window().Canvas().FocusNext()
	test.Type(h.u.Window().Canvas().Focused(), "https://example.com/mcp")
	enter(h.u.Window().Canvas().Focused())
	h.settle()

	eps, err := h.st.Endpoints()
	if err != nil || len(eps) != 1 || eps[0].Name != "work" || eps[0].URL != "https://example.com/mcp" || eps[0].Auth != store.AuthNone {
		t.Fatalf("config = %+v, %v", eps, err)
	}
	if h.u.editing != nil || h.u.selected != eps[0].ID {
		t.Errorf("after saving: editing=%v selected=%q", h.u.editing != nil, h.u.selected)
	}
	if h.u.w.title.Text != "work" || h.u.w.state.Text != string(StateNotRunning) {
		t.Errorf("detail shows %q %q", h.u.w.title.Text, h.u.w.state.Text)
	}
	if got := h.u.trayMenu.Items[0].Label; got != "work — not running" {
		t.Errorf("tray item = %q", got)
	}
}

func TestEditorValidatesInline(t *testing.T) {
	h := newHarness(t)
	h.add(store.Endpoint{Name: "taken", URL: "https://example.com/mcp"})
	h.u.openEditor(nil)
	e := h.u.editing

	for _, tc := range []struct {
		field     string
		entry     *fyne.Focusable
		text      string
		wantError string // "" means valid
	}{
		{field: "name", text: "has space", wantError: "use up to 64 letters"},
		{field: "name", text: "TAKEN", wantError: "already exists"},
		{field: "name", text: "fresh"},
		{field: "url", text: "ftp://example.com/x", wantError: "scheme must be https or http"},
		{field: "url", text: "example.com", wantError: "not an absolute URL"},
		{field: "url", text: "http://example.com/mcp", wantError: "plain http"},
		{field: "url", text: "http://127.0.0.1:9/mcp"},
		{field: "headers", text: "no colon here", wantError: "want \"Name: value\""},
		{field: "headers", text: "Bad Name: x", wantError: "not a valid header name"},
		{field: "headers", text: "X-Key: ${keyring:}", wantError: "X-Key"},
		{field: "headers", text: "X-Team: a\nX-Key: keyring:apikey"},
	} {
		var entry = map[string]interface {
			SetText(string)
			Validate() error
		}{"name": e.name, "url": e.url, "headers": e.headers}[tc.field]
		entry.SetText(tc.text)
		err := entry.Validate()
		switch {
		case tc.wantError == "" && err != nil:
			t.Errorf("%s %q: unexpected error %v", tc.field, tc.text, err)
		case tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)):
			t.Errorf("%s %q: error %v, want it to contain %q", tc.field, tc.text, err, tc.wantError)
		}
	}

	// Plain http to a remote host becomes valid once allowed.
	e.url.SetText("http://example.com/mcp")
	if e.url.Validate() == nil {
		t.Fatal("plain http accepted without allow-http")
	}
	e.allowHTTP.SetChecked(true)
	if err := e.url.Validate(); err != nil {
		t.Errorf("allow-http: %v", err)
	}
	// Bearer auth sets Authorization itself.
	e.headers.SetText("Authorization: Bearer x")
	e.auth.SetSelected(string(store.AuthBearer))
	if err := e.headers.Validate(); err == nil || !strings.Contains(err.Error(), "auth bearer sets Authorization") {
		t.Errorf("bearer + Authorization header: %v", err)
	}

	// Saving an invalid form says why and writes nothing.
	e.name.SetText("taken")
	e.submit()
	h.settle()
	if !strings.Contains(e.message.Text, "already exists") {
		t.Errorf("message = %q", e.message.Text)
	}
	if eps, _ := h.st.Endpoints(); len(eps) != 1 {
		t.Errorf("config has %d endpoints", len(eps))
	}
}

func TestEditEndpointKeepsIDAndRenames(t *testing.T) {
	h := newHarness(t)
	ep := h.add(store.Endpoint{Name: "old", URL: "https://example.com/mcp", Headers: map[string]string{"X-B": "2", "X-A": "1"}})
	h.selectByName("old")
	test.Tap(h.u.w.edit)
	e := h.u.editing
	if e == nil || e.headers.Text != "X-A: 1\nX-B: 2" || e.name.Text != "old" {
		t.Fatalf("editor not filled in: %+v", e)
	}
	e.name.SetText("new")
	e.headers.SetText("X-A: 3")
	e.submit()
	h.settle()
	got, err := h.st.Endpoint(ep.ID)
	if err != nil || got.Name != "new" || got.Headers["X-A"] != "3" || len(got.Headers) != 1 {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if h.u.selected != ep.ID || h.u.w.title.Text != "new" {
		t.Errorf("selected %q, title %q", h.u.selected, h.u.w.title.Text)
	}
}

// writeStatus publishes a bridge status as a running bridge would; the
// pid is ours so the liveness check keeps it.
func writeStatus(t *testing.T, dir string, st store.Status) string {
	t.Helper()
	if st.PID == 0 {
		st.PID = os.Getpid()
	}
	b, _ := json.Marshal(st)
	path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", st.PID, st.Endpoint))
	if err := store.WriteFileAtomic(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLiveStatusFromStatusFiles(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.st.Add(ctx, store.Endpoint{Name: "work", URL: "https://example.com/mcp"})
	h.u.Start(ctx)
	h.pump("the endpoint from the config watch", func() bool { return len(h.u.rows) == 1 })
	h.selectByName("work")

	now := h.u.now()
	path := writeStatus(t, h.stateDir, store.Status{
		Endpoint: "work", State: store.StateConnected, Requests: 7,
		LastActivity: now.Add(-5 * time.Minute), LastError: "server answered HTTP 502", Updated: now,
	})
	h.pump("the connected state", func() bool { return h.u.rows[0].State == store.StateConnected })
	w := h.u.w
	if w.state.Text != "connected" || w.requests.Text != "7" || w.activity.Text != "5 min ago" || w.lastError.Text != "server answered HTTP 502" || w.bridges.Text != "1" {
		t.Errorf("detail: state %q requests %q activity %q error %q bridges %q", w.state.Text, w.requests.Text, w.activity.Text, w.lastError.Text, w.bridges.Text)
	}
	if got := h.u.trayMenu.Items[0]; got.Label != "work — connected · 1 bridge" || got.Icon != dotIcons[store.StateConnected] {
		t.Errorf("tray item = %q", got.Label)
	}

	// A second client runs the same endpoint; one of them fails.
	writeStatus(t, h.stateDir, store.Status{Endpoint: "work", PID: os.Getppid(), State: store.StateError, Requests: 3, LastError: "cannot reach the MCP server", Updated: now.Add(time.Second)})
	h.pump("two bridges", func() bool { return h.u.rows[0].Bridges == 2 })
	if w.state.Text != "error" || w.requests.Text != "10" || w.lastError.Text != "cannot reach the MCP server" {
		t.Errorf("two bridges: state %q requests %q error %q", w.state.Text, w.requests.Text, w.lastError.Text)
	}
	if got := h.u.trayMenu.Items[0].Label; got != "work — error · 2 bridges" {
		t.Errorf("tray item = %q", got)
	}

	os.Remove(path)
	os.Remove(filepath.Join(h.stateDir, fmt.Sprintf("%d-work.json", os.Getppid())))
	h.pump("the bridges to go", func() bool { return h.u.rows[0].Bridges == 0 })
	if w.state.Text != string(StateNotRunning) {
		t.Errorf("state = %q", w.state.Text)
	}
}

func TestCredentialsGoToTheKeyring(t *testing.T) {
	h := newHarness(t)
	ep := h.add(store.Endpoint{Name: "work", URL: "https://example.com/mcp", Auth: store.AuthBearer})
	h.selectByName("work")
	c := &h.u.w.creds
	if c.status.Text != "token: not stored" {
		t.Fatalf("status = %q", c.status.Text)
	}
	test.Type(c.entry, "s3cret")
	test.Tap(c.store)
	if c.entry.Text != "" {
		t.Error("the secret stays in the field after storing")
	}
	h.settle()
	if c.status.Text != "token: stored" {
		t.Errorf("status = %q", c.status.Text)
	}
	if v, err := h.st.Secret(context.Background(), ep.ID, store.SecretToken); err != nil || v != "s3cret" {
		t.Errorf("keyring has %q, %v", v, err)
	}
	if strings.Contains(test.RenderToMarkup(h.u.Window().Canvas()), "s3cret") {
		t.Error("the secret is shown in the window")
	}

	// The keyring's own failure is shown as a readable message.
	keyring.MockInitWithError(errors.New("org.freedesktop.DBus.Error.ServiceUnknown"))
	test.Type(c.entry, "other")
	enter(c.entry)
	h.settle()
	if !strings.Contains(c.status.Text, "keyring") || strings.Contains(c.status.Text, "DBus") {
		t.Errorf("keyring error shown as %q", c.status.Text)
	}
}

func TestCredentialsForHeaderSecrets(t *testing.T) {
	h := newHarness(t)
	h.add(store.Endpoint{Name: "work", URL: "https://example.com/mcp", Auth: store.AuthHeaders,
		Headers: map[string]string{"X-Api-Key": "keyring:apikey", "X-Org": "${keyring:org}"}})
	h.add(store.Endpoint{Name: "open", URL: "https://example.com/mcp"})
	h.selectByName("work")
	c := &h.u.w.creds
	if got := strings.Join(c.name.Options, ","); got != "apikey,org" || c.status.Text != "apikey: not stored" {
		t.Errorf("secrets %q, status %q", got, c.status.Text)
	}
	h.selectByName("open")
	if c.form.Visible() || !c.none.Visible() {
		t.Error("an endpoint without secrets shows the secret form")
	}
}

func TestTestConnectionAgainstTheDemoServer(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, _, stop, err := demo.Start(ctx, "", server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	h.add(store.Endpoint{Name: "demo", URL: url})
	h.selectByName("demo")
	test.Tap(h.u.w.test)
	if !h.u.w.test.Disabled() {
		t.Error("the button stays enabled while testing")
	}
	h.settle()
	got := h.u.w.testResult.Text
	for _, want := range []string{"Connected to mcpbridge-demo", "protocol 2025-11-25", "tools", "round trip"} {
		if !strings.Contains(got, want) {
			t.Errorf("result %q lacks %q", got, want)
		}
	}

	stop()
	test.Tap(h.u.w.test)
	h.settle()
	if got := h.u.w.testResult.Text; !strings.HasPrefix(got, "Test failed: ") || !strings.Contains(got, "connection refused") {
		t.Errorf("failure shown as %q", got)
	}
}

func TestConnectAnAIClient(t *testing.T) {
	h := newHarness(t)
	h.u.opts.ConfigDirEnv = "/tmp/mcpb-config"
	h.add(store.Endpoint{Name: "work", URL: "https://example.com/mcp"})
	h.selectByName("work")

	h.u.copyConfig("vscode")
	clip := h.u.app.Clipboard().Content()
	for _, want := range []string{`"servers"`, `"command": "/opt/mcpbridge/bin/mcpbridge"`, `"type": "stdio"`, `"MCPBRIDGE_CONFIG_DIR": "/tmp/mcpb-config"`} {
		if !strings.Contains(clip, want) {
			t.Errorf("clipboard lacks %s:\n%s", want, clip)
		}
	}

	path := filepath.Join(h.dir, "claude.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}`), 0o600)
	h.u.installClient("claude")
	h.settle()
	if msg := h.u.w.clientMsg.Text; !strings.HasPrefix(msg, "Added work in "+path) {
		t.Errorf("message = %q", msg)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
		Theme string `json:"theme"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil || cfg.Theme != "dark" || cfg.MCPServers["other"].Command != "x" ||
		cfg.MCPServers["work"].Command != "/opt/mcpbridge/bin/mcpbridge" || strings.Join(cfg.MCPServers["work"].Args, " ") != "run work" {
		t.Errorf("claude config = %s (%v)", b, err)
	}
}

func TestRemoveEndpointAndSecrets(t *testing.T) {
	h := newHarness(t)
	ep := h.add(store.Endpoint{Name: "work", URL: "https://example.com/mcp", Auth: store.AuthBearer})
	h.st.SetSecret(context.Background(), ep.ID, store.SecretToken, "x")
	h.selectByName("work")
	h.u.removeEndpoint(ep)
	h.settle()
	if len(h.u.rows) != 0 || h.u.selected != "" {
		t.Errorf("rows %d, selected %q", len(h.u.rows), h.u.selected)
	}
	if ok, _ := h.st.HasSecret(context.Background(), ep.ID, store.SecretToken); ok {
		t.Error("the token is still in the keyring")
	}
	if got := h.u.trayMenu.Items[0]; got.Label != "No endpoints yet" || !got.Disabled {
		t.Errorf("tray item = %q", got.Label)
	}
}

func TestLogViewFollowsTheLogFile(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.add(store.Endpoint{Name: "work", URL: "https://example.com/mcp"})
	h.selectByName("work")
	if !strings.Contains(h.u.w.logNote.Text, "No log yet") {
		t.Errorf("note = %q", h.u.w.logNote.Text)
	}
	h.u.Start(ctx)
	os.MkdirAll(h.logDir, 0o700)
	// Lines are appended until one shows, since the watch starts
	// asynchronously and only changes after it are seen.
	f, err := os.OpenFile(store.LogFile(h.logDir, "work"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := time.Time{}
	h.pump("the log to show", func() bool {
		if time.Since(last) > 200*time.Millisecond {
			f.WriteString("level=INFO msg=\"relaying stdio\"\n")
			last = time.Now()
		}
		return strings.Contains(h.u.w.logText.Text, "relaying stdio")
	})
}

// fakeOAuth stands in for the browser sign-in. Its methods run off the
// Fyne thread.
type fakeOAuth struct {
	mu        sync.Mutex
	signedIn  bool
	checkErr  error
	loginErr  error
	logoutErr error
	logins    int
	logouts   int
	urls      []string // of the endpoints it was opened for
}

func (f *fakeOAuth) open(ep store.Endpoint) (OAuthSignIn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.urls = append(f.urls, ep.URL)
	return f, nil
}

func (f *fakeOAuth) Login(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("sign-in without a deadline")
	}
	f.logins++
	if f.loginErr != nil {
		return f.loginErr
	}
	f.signedIn = true
	return nil
}

func (f *fakeOAuth) Logout(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logouts++
	if f.logoutErr != nil {
		return f.logoutErr
	}
	f.signedIn = false
	return nil
}

func (f *fakeOAuth) SignedIn(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.signedIn, f.checkErr
}

func (f *fakeOAuth) set(fn func(*fakeOAuth)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// withFakeOAuth points the harness's sign-in at a fake.
func (h *harness) withFakeOAuth() *fakeOAuth {
	f := &fakeOAuth{}
	h.u.opts.OAuth = f.open
	return f
}

// signInRow is what the sign-in row shows: the state text and which of
// Sign in / Sign out can be pressed.
func (h *harness) signInRow() (text string, canSignIn, canSignOut bool) {
	w := h.u.w
	return w.signInState.Text, !w.signIn.Disabled(), !w.signOut.Disabled()
}

func (h *harness) wantSignInRow(what, text string, canSignIn, canSignOut bool) {
	h.t.Helper()
	gt, gi, gout := h.signInRow()
	if gt != text || gi != canSignIn || gout != canSignOut {
		h.t.Errorf("%s: row shows %q, sign in enabled %v, sign out enabled %v; want %q, %v, %v", what, gt, gi, gout, text, canSignIn, canSignOut)
	}
}

func TestOAuthSignInState(t *testing.T) {
	h := newHarness(t)
	f := h.withFakeOAuth()
	h.add(store.Endpoint{Name: "o", URL: "https://example.com/mcp", Auth: store.AuthOAuth})
	h.add(store.Endpoint{Name: "p", URL: "https://example.com/mcp"})

	h.u.w.list.Select(0)
	h.wantSignInRow("while checking", textChecking, true, false)
	h.settle()
	if !h.u.w.oauth.Visible() {
		t.Fatal("the sign-in row is hidden for an OAuth endpoint")
	}
	h.wantSignInRow("signed out", "Not signed in", true, false)

	h.selectByName("p")
	if h.u.w.oauth.Visible() {
		t.Error("the sign-in row is shown for a non-OAuth endpoint")
	}

	// Selecting the endpoint again asks again.
	f.set(func(f *fakeOAuth) { f.signedIn = true })
	h.selectByName("o")
	h.wantSignInRow("signed in", "Signed in", true, true)

	f.set(func(f *fakeOAuth) {
		f.checkErr = &store.UserError{Msg: "The OS keyring is not available.", Err: errors.New("dbus")}
	})
	h.selectByName("p")
	h.selectByName("o")
	h.wantSignInRow("keyring error", "The OS keyring is not available.", true, false)

	// A changed URL is checked again without reselecting.
	f.set(func(f *fakeOAuth) { f.checkErr = nil })
	ep := h.u.rows[0].Endpoint
	if _, err := h.st.Update(context.Background(), ep.ID, func(p *store.Endpoint) error { p.URL = "https://other.example.com/mcp"; return nil }); err != nil {
		t.Fatal(err)
	}
	cfg, _ := h.st.Load()
	h.u.setConfig(cfg, nil)
	h.settle()
	h.wantSignInRow("after the URL changed", "Signed in", true, true)
	if f.urls[len(f.urls)-1] != "https://other.example.com/mcp" {
		t.Errorf("checked %v", f.urls)
	}
}

func TestOAuthSignInSucceeds(t *testing.T) {
	h := newHarness(t)
	f := h.withFakeOAuth()
	h.add(store.Endpoint{Name: "o", URL: "https://example.com/mcp", Auth: store.AuthOAuth})
	h.add(store.Endpoint{Name: "p", URL: "https://example.com/mcp"})
	h.selectByName("o")
	h.wantSignInRow("before", "Not signed in", true, false)

	test.Tap(h.u.w.signIn)
	h.wantSignInRow("while signing in", "Finish signing in in your browser…", false, false)
	// Leaving and coming back while the browser is open keeps that.
	h.u.w.list.Select(1)
	h.u.w.list.Select(0)
	h.wantSignInRow("back while signing in", "Finish signing in in your browser…", false, false)
	test.Tap(h.u.w.signIn) // disabled: no second sign-in

	h.settle()
	h.wantSignInRow("after", "Signed in", true, true)
	if f.logins != 1 {
		t.Errorf("%d sign-ins", f.logins)
	}
}

func TestOAuthSignInFails(t *testing.T) {
	h := newHarness(t)
	f := h.withFakeOAuth()
	h.add(store.Endpoint{Name: "o", URL: "https://example.com/mcp", Auth: store.AuthOAuth})
	h.selectByName("o")

	f.set(func(f *fakeOAuth) {
		f.loginErr = &store.UserError{Msg: "Sign-in was not completed in the browser within 5m0s.", Err: errors.New("oauth: authorization failed: no callback")}
	})
	test.Tap(h.u.w.signIn)
	h.settle()
	h.wantSignInRow("timed out", "Sign-in was not completed in the browser within 5m0s.", true, true)

	f.set(func(f *fakeOAuth) {
		f.loginErr = errors.New("oauth: authorization failed: the authorization server said access_denied")
	})
	test.Tap(h.u.w.signIn)
	h.settle()
	h.wantSignInRow("refused", "Sign-in failed: oauth: authorization failed: the authorization server said access_denied", true, true)
	if f.signedIn {
		t.Error("signed in after failures")
	}
}

func TestOAuthSignOut(t *testing.T) {
	h := newHarness(t)
	f := h.withFakeOAuth()
	f.signedIn = true
	h.add(store.Endpoint{Name: "o", URL: "https://example.com/mcp", Auth: store.AuthOAuth})
	h.selectByName("o")
	h.wantSignInRow("before", "Signed in", true, true)

	f.set(func(f *fakeOAuth) {
		f.logoutErr = &store.UserError{Msg: "The OS keyring is not available.", Err: errors.New("dbus")}
	})
	test.Tap(h.u.w.signOut)
	h.wantSignInRow("while signing out", "Signing out…", false, false)
	h.settle()
	h.wantSignInRow("failed", "The OS keyring is not available.", true, true)

	f.set(func(f *fakeOAuth) { f.logoutErr = nil })
	test.Tap(h.u.w.signOut)
	h.settle()
	h.wantSignInRow("after", "Not signed in", true, false)
	if f.logouts != 2 || f.signedIn {
		t.Errorf("%d sign-outs, signed in %v", f.logouts, f.signedIn)
	}
}

// TestOAuthSignOutFromTheKeyring uses the real sign-in on the (mock)
// keyring: no network is needed to see or forget a token set.
func TestOAuthSignOutFromTheKeyring(t *testing.T) {
	h := newHarness(t)
	ep := h.add(store.Endpoint{Name: "o", URL: "https://example.com/mcp", Auth: store.AuthOAuth})
	ks := auth.NewKeyringStore(h.st, ep.ID)
	if err := ks.Save(context.Background(), &auth.Credentials{Token: &oauth2.Token{AccessToken: "at", RefreshToken: "rt"}, Clients: map[string]auth.Client{"https://as.example.com": {ID: "c1"}}}); err != nil {
		t.Fatal(err)
	}
	h.selectByName("o")
	h.wantSignInRow("stored token", "Signed in", true, true)
	test.Tap(h.u.w.signOut)
	h.settle()
	h.wantSignInRow("after", "Not signed in", true, false)
	c, err := ks.Load(context.Background())
	if err != nil || c == nil || c.Token != nil || c.Clients["https://as.example.com"].ID != "c1" {
		t.Errorf("keyring keeps %+v, %v; want the registration without the token", c, err)
	}
}

func TestBrokenConfigIsReported(t *testing.T) {
	h := newHarness(t)
	h.add(store.Endpoint{Name: "work", URL: "https://example.com/mcp"})
	h.u.setConfig(nil, fmt.Errorf("config.json: %w: line 3", store.ErrBrokenConfig))
	if !h.u.w.configErr.Visible() || !strings.Contains(h.u.w.configErr.Text, "line 3") || len(h.u.rows) != 1 {
		t.Errorf("broken config: banner %q, %d rows", h.u.w.configErr.Text, len(h.u.rows))
	}
}
