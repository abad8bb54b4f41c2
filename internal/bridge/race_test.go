//go:build race

package bridge

// raceEnabled reports whether the tests run under the race detector, which
// makes every call several times slower; load tests size themselves by it.
const raceEnabled = true
