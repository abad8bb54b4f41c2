//go:build !unix && !windows

package store

import "context"

// lockFile is a no-op where no file lock is available; Store.mu still
// serialises writers inside one process.
func lockFile(ctx context.Context, name string) (func(), error) { return func() {}, ctx.Err() }
