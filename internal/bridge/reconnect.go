package bridge

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff shapes reconnection delays: exponential growth from Initial to Max
// with full jitter (a random delay between zero and the ceiling), so that many
// bridges cut off by one outage do not reconnect in lockstep. A server's
// `retry:` field overrides the computed delay, as the SSE standard requires.
type Backoff struct {
	Initial time.Duration // default 500 ms
	Max     time.Duration // default 30 s
	// Attempts bounds consecutive failed attempts to resume a request's stream.
	// Default 5. The GET stream retries for as long as the session lives.
	Attempts int
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Attempts <= 0 {
		b.Attempts = 5
	}
	return b
}

// Delay returns the wait before attempt n (0-based). retry, when positive, is
// the server's `retry:` value and wins.
func (b Backoff) Delay(n int, retry time.Duration) time.Duration {
	if retry > 0 {
		return retry
	}
	b = b.withDefaults()
	ceil := b.Initial
	for i := 0; i < n && ceil < b.Max; i++ {
		ceil *= 2
	}
	if ceil > b.Max {
		ceil = b.Max
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
