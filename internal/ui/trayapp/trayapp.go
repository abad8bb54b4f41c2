//go:build !nogui

package trayapp

import (
	"context"
	"errors"
	"log/slog"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/mcpbridge/mcpbridge/assets"
	"github.com/mcpbridge/mcpbridge/internal/ui"
)

// AppID identifies the app to the desktop (preferences, notifications);
// it matches FyneApp.toml.
const AppID = "io.github.mcpbridge.mcpbridge"

// Options configure Run.
type Options struct {
	UI ui.Options
	// Socket is the single-instance socket (see ui.ClaimInstance).
	Socket string
	// Hidden starts in the tray without showing the window (autostart).
	Hidden bool
}

// Run runs the tray app until Quit or ctx is done. If another instance
// is running it asks that one to show its window and returns nil.
func Run(ctx context.Context, opts Options) error {
	log := opts.UI.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
		opts.UI.Logger = log
	}
	inst, err := ui.ClaimInstance(opts.Socket, log)
	if errors.Is(err, ui.ErrRunning) {
		log.Info("the tray is already running; asked it to show its window")
		return nil
	}
	if err != nil {
		// Two icons are better than none: carry on without the socket.
		log.Warn("single-instance socket unavailable", "err", err)
	}

	a := app.NewWithID(AppID)
	icon := fyne.NewStaticResource("mcpbridge.png", assets.Icon)
	a.SetIcon(icon)
	u := ui.New(a, opts.UI)
	win := u.Window()
	// Closing the window hides it; the tray keeps running until Quit.
	win.SetCloseIntercept(win.Hide)

	if inst != nil {
		defer inst.Close()
		inst.Serve(func() { fyne.Do(u.Show) })
	}
	if d, ok := a.(desktop.App); ok {
		// Without a tray host (or a session bus) the driver logs and
		// carries on; the window and the socket still work.
		d.SetSystemTrayMenu(u.TrayMenu())
		d.SetSystemTrayIcon(icon)
		d.SetSystemTrayWindow(win)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	u.Start(runCtx)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			fyne.Do(a.Quit)
		case <-stopped:
		}
	}()
	if !opts.Hidden {
		win.Show()
	}
	a.Run()
	log.Info("tray stopped")
	return nil
}
