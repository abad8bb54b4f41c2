// Package ui is mcpbridge's tray app: a system tray menu and a window to
// manage endpoints, see what running bridges are doing and connect an AI
// client. It only observes and commands: bridges own the relay state and
// publish it as status files; the store owns the config and the keyring.
//
// Nothing here imports fyne.io/fyne/v2/app, so the package is tested
// headlessly with fyne.io/fyne/v2/test (and builds without cgo); the
// trayapp sub-package creates the real app.
//
// Threading: widgets are touched only on the Fyne thread. Anything that
// may block (keyring, config writes, network, files) runs in a goroutine
// through UI.async, which hands the widget update back with fyne.Do.
package ui

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"fyne.io/fyne/v2"

	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/clientconfig"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

// Options configure the tray app.
type Options struct {
	// Store holds the endpoints and secrets. Required.
	Store *store.Store
	// StateDir is where running bridges publish status files. Required.
	StateDir string
	// LogDir holds NAME.log files of named bridges (store.DefaultLogDir).
	// Empty hides the log view.
	LogDir string
	// Executable is the mcpbridge binary AI clients should launch. Empty
	// means os.Executable.
	Executable string
	// ConfigDirEnv, when not empty, is passed to AI clients as
	// MCPBRIDGE_CONFIG_DIR so their bridges find the same config.
	ConfigDirEnv string
	// ClientConfigPath finds an AI client's config file. Nil means
	// clientconfig.DefaultPath; tests point it at a temp dir.
	ClientConfigPath func(client string) (string, error)
	// Probe runs "Test connection". Nil means bridge.Probe with the
	// endpoint's headers resolved from the store.
	Probe func(ctx context.Context, ep store.Endpoint) (bridge.ProbeResult, error)
	// OAuth returns the sign-in of an OAuth endpoint for "Sign in", "Sign
	// out" and the signed-in state; it is called off the Fyne thread, once
	// per action. Nil means auth.New on the endpoint's transport with the
	// tokens in the store's keyring.
	OAuth func(ep store.Endpoint) (OAuthSignIn, error)
	// Logger receives diagnostics. Nil discards them.
	Logger *slog.Logger
	// Version is sent as the probe's User-Agent.
	Version string
}

// probeTimeout bounds "Test connection" as a whole.
const probeTimeout = 20 * time.Second

// UI is the tray app's window and menu. Create it with New on the Fyne
// thread, then call Start.
type UI struct {
	app  fyne.App
	win  fyne.Window
	opts Options
	log  *slog.Logger

	// do runs a widget update on the Fyne thread: fyne.Do, replaced in
	// tests by a queue the test goroutine drains.
	do func(func())
	// pending counts async work in flight, so tests can wait for it.
	pending sync.WaitGroup
	// now is the clock for "5 min ago"; tests fix it.
	now func() time.Time

	// Fyne-thread state.
	eps       []store.Endpoint
	configErr error
	statuses  []store.Status
	rows      []Row
	selected  string // endpoint ID
	editing   *editor
	// oauthBusy holds the endpoints with a sign-in or sign-out running,
	// and what to show meanwhile.
	oauthBusy map[string]string
	// signInGen tells a signed-in check's answer from a stale one.
	signInGen int
	// signInShown is the endpoint (ID and URL) whose sign-in state the
	// window shows or is checking.
	signInShown string

	w        *widgets
	trayMenu *fyne.Menu
}

// New builds the window and the tray menu on the Fyne thread. It shows
// nothing and starts no watcher; see Start and Show.
func New(a fyne.App, opts Options) *UI {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ClientConfigPath == nil {
		opts.ClientConfigPath = clientconfig.DefaultPath
	}
	u := &UI{app: a, opts: opts, log: opts.Logger, do: fyne.Do, now: time.Now, oauthBusy: map[string]string{}}
	if u.opts.Probe == nil {
		u.opts.Probe = u.probe
	}
	if u.opts.OAuth == nil {
		u.opts.OAuth = u.newOAuth
	}
	u.win = a.NewWindow("mcpbridge")
	u.build()
	u.trayMenu = fyne.NewMenu("mcpbridge")
	u.refreshTray()
	return u
}

// Window is the main window.
func (u *UI) Window() fyne.Window { return u.win }

// TrayMenu is the system tray menu; it is refreshed in place as endpoints
// and bridges change.
func (u *UI) TrayMenu() *fyne.Menu { return u.trayMenu }

// Show brings the window up and to the front (the tray's "Open", or a
// second start of the app).
func (u *UI) Show() {
	u.win.Show()
	u.win.RequestFocus()
}

// Start watches the config and the bridges' status files until ctx is
// done. Call it once, from any goroutine.
func (u *UI) Start(ctx context.Context) {
	go func() {
		err := u.opts.Store.Watch(ctx, func(cfg *store.Config, err error) {
			u.do(func() { u.setConfig(cfg, err) })
		})
		if err != nil {
			u.log.Warn("config watch ended", "err", err)
		}
	}()
	go watchDirs(ctx, u.opts.StateDir, u.opts.LogDir, u.log,
		func(sts []store.Status) { u.do(func() { u.setStatuses(sts) }) },
		func(file string) { u.do(func() { u.logChanged(file) }) })
}

// async runs work off the Fyne thread and applies the update it returns
// on the Fyne thread. Every blocking call of the UI goes through here.
func (u *UI) async(work func() (update func())) {
	u.pending.Add(1)
	go func() {
		defer u.pending.Done()
		if update := work(); update != nil {
			u.do(update)
		}
	}()
}

// setConfig takes a new config from the watcher. A broken file keeps the
// endpoints shown and says what is wrong.
func (u *UI) setConfig(cfg *store.Config, err error) {
	u.configErr = err
	if err == nil {
		u.eps = cfg.Endpoints
	}
	u.refresh()
}

func (u *UI) setStatuses(sts []store.Status) {
	u.statuses = sts
	u.refresh()
}

// refresh recomputes the rows and updates every view of them.
func (u *UI) refresh() {
	u.rows = Rows(u.eps, u.statuses)
	if u.selected != "" && u.rowIndex(u.selected) < 0 {
		u.selected = ""
	}
	u.refreshWindow()
	u.refreshTray()
}

func (u *UI) rowIndex(id string) int {
	for i, r := range u.rows {
		if r.Endpoint.ID == id {
			return i
		}
	}
	return -1
}

func (u *UI) selectedRow() (Row, bool) {
	if i := u.rowIndex(u.selected); i >= 0 {
		return u.rows[i], true
	}
	return Row{}, false
}

// probe is the default Options.Probe: the endpoint as a bridge would use
// it, with headers (and keyring secrets) resolved at send time.
func (u *UI) probe(ctx context.Context, ep store.Endpoint) (bridge.ProbeResult, error) {
	hc, err := bridge.NewHTTPClient(bridge.TransportOptions{CAFile: ep.Options.CAFile, DialTimeout: time.Duration(ep.Options.ConnectTimeout)})
	if err != nil {
		return bridge.ProbeResult{}, err
	}
	return bridge.Probe(ctx, bridge.ClientOptions{
		URL:        ep.URL,
		HTTPClient: hc,
		Header:     func(ctx context.Context) (http.Header, error) { return u.opts.Store.ResolveHeaders(ctx, ep) },
		Logger:     u.log,
		UserAgent:  "mcpbridge-tray/" + u.opts.Version,
	})
}

func (u *UI) executable() (string, error) {
	if u.opts.Executable != "" {
		return u.opts.Executable, nil
	}
	return os.Executable()
}

func (u *UI) logPath(name string) string {
	if u.opts.LogDir == "" {
		return ""
	}
	return store.LogFile(u.opts.LogDir, name)
}

func (u *UI) logChanged(file string) {
	if r, ok := u.selectedRow(); ok && filepath.Base(u.logPath(r.Endpoint.Name)) == file {
		u.loadLog()
	}
}
