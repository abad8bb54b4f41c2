package store

import (
	"os"
	"path/filepath"
)

// EnvLogDir overrides where named bridges write their logs.
const EnvLogDir = "MCPBRIDGE_LOG_DIR"

// DefaultLogDir is where "mcpbridge run NAME" writes NAME.log unless told
// otherwise, and where the tray reads it: $MCPBRIDGE_LOG_DIR, else the
// "logs" directory next to the status directory (so with the default
// $XDG_RUNTIME_DIR/mcpbridge/status it is $XDG_RUNTIME_DIR/mcpbridge/logs,
// cleared at logout like the status files it explains).
func DefaultLogDir() (string, error) {
	if d := os.Getenv(EnvLogDir); d != "" {
		return d, nil
	}
	st, err := DefaultStateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(st), "logs"), nil
}

// LogFile is the log file of the endpoint called name inside dir.
func LogFile(dir, name string) string {
	file := unsafeName.ReplaceAllString(name, "_")
	if file == "" {
		file = "unnamed"
	}
	return filepath.Join(dir, file+".log")
}
