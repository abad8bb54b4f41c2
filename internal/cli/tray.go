//go:build !nogui

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/mcpbridge/mcpbridge/internal/store"
	"github.com/mcpbridge/mcpbridge/internal/ui"
	"github.com/mcpbridge/mcpbridge/internal/ui/trayapp"
)

func init() {
	register(&command{name: "tray", summary: "the tray app: manage endpoints, see live status, connect an AI client", run: runTray})
}

func runTray(ctx context.Context, env *Env, args []string) int {
	fs := flag.NewFlagSet("mcpbridge tray", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	hidden := fs.Bool("hidden", false, "start in the tray without showing the window (for autostart)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFile := fs.String("log-file", "", "also append logs to this file")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "Usage: mcpbridge [tray] [flags]\n\nStarts the tray app; if it is already running, shows its window.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		return usageError(env, "tray takes no arguments")
	}
	log, closeLog, err := newLogger(env.Stderr, *logLevel, *logFile)
	if err != nil {
		return usageError(env, "%v", err)
	}
	defer closeLog()
	st, err := openStore(env)
	if err != nil {
		return failure(env, err)
	}
	stateDir, err := store.DefaultStateDir()
	if err != nil {
		return failure(env, err)
	}
	logDir, err := store.DefaultLogDir()
	if err != nil {
		log.Warn("no log directory; the log view is off", "err", err)
		logDir = ""
	}
	err = trayapp.Run(ctx, trayapp.Options{
		UI: ui.Options{
			Store:        store.New(st.Dir(), log),
			StateDir:     stateDir,
			LogDir:       logDir,
			ConfigDirEnv: env.getenv(store.EnvConfigDir),
			Logger:       log,
			Version:      Version,
		},
		// Next to the status dir: per user, in the runtime dir when there is one.
		Socket: filepath.Join(filepath.Dir(stateDir), "tray.sock"),
		Hidden: *hidden,
	})
	if err != nil {
		return failure(env, err)
	}
	return ExitOK
}
