package ui

import (
	"fmt"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// StateNotRunning is shown for an endpoint no bridge is running for. It is
// not a store.State: bridges never publish it, it is the absence of them.
const StateNotRunning store.State = "not running"

// Row is one endpoint as the window and the tray menu show it: its config
// joined with what the bridges running it publish. Several AI clients may
// run the same endpoint at once, so the numbers add up over bridges.
type Row struct {
	Endpoint     store.Endpoint
	State        store.State
	Bridges      int
	Requests     int64
	Errors       int64
	LastActivity time.Time
	LastError    string
}

// statePriority orders states for an endpoint run by several bridges: the
// one that most needs attention wins, then the one doing most.
var statePriority = map[store.State]int{
	store.StateError:      4,
	store.StateConnecting: 3,
	store.StateConnected:  2,
	store.StateIdle:       1,
}

// Rows joins endpoints (in config order) with bridge statuses by name.
// Statuses of endpoints that are no longer configured are dropped: the
// window shows the config, and such a bridge is about to stop anyway.
func Rows(eps []store.Endpoint, sts []store.Status) []Row {
	rows := make([]Row, len(eps))
	index := make(map[string]int, len(eps))
	for i, ep := range eps {
		rows[i] = Row{Endpoint: ep, State: StateNotRunning}
		index[ep.Name] = i
	}
	lastErrAt := make([]time.Time, len(eps))
	for _, st := range sts {
		i, ok := index[st.Endpoint]
		if !ok {
			continue
		}
		r := &rows[i]
		r.Bridges++
		r.Requests += st.Requests
		r.Errors += st.Errors
		if st.LastActivity.After(r.LastActivity) {
			r.LastActivity = st.LastActivity
		}
		if statePriority[st.State] > statePriority[r.State] {
			r.State = st.State
		}
		if st.LastError != "" && !st.Updated.Before(lastErrAt[i]) {
			r.LastError, lastErrAt[i] = st.LastError, st.Updated
		}
	}
	return rows
}

// Summary is the one-line state of a row, e.g. "connected · 2 bridges".
func (r Row) Summary() string {
	if r.Bridges == 0 {
		return string(StateNotRunning)
	}
	if r.Bridges == 1 {
		return string(r.State) + " · 1 bridge"
	}
	return fmt.Sprintf("%s · %d bridges", r.State, r.Bridges)
}

// ago renders a past time for people: "just now", "5 min ago", or a date.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return t.Local().Format("2 Jan 15:04")
}
