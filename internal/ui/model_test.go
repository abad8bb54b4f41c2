package ui

import (
	"testing"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

func TestRows(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eps := []store.Endpoint{{ID: "1", Name: "a"}, {ID: "2", Name: "b"}}
	rows := Rows(eps, []store.Status{
		{Endpoint: "a", State: store.StateIdle, Requests: 1, LastActivity: t0, LastError: "old", Updated: t0},
		{Endpoint: "a", State: store.StateConnected, Requests: 2, LastActivity: t0.Add(time.Minute), LastError: "new", Updated: t0.Add(time.Second)},
		{Endpoint: "gone", State: store.StateError},
	})
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	a, b := rows[0], rows[1]
	if a.State != store.StateConnected || a.Bridges != 2 || a.Requests != 3 || !a.LastActivity.Equal(t0.Add(time.Minute)) || a.LastError != "new" {
		t.Errorf("a = %+v", a)
	}
	if a.Summary() != "connected · 2 bridges" || b.Summary() != "not running" || b.State != StateNotRunning {
		t.Errorf("summaries %q %q", a.Summary(), b.Summary())
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{time.Second, "just now"}, {30 * time.Second, "30 s ago"}, {5 * time.Minute, "5 min ago"}, {3 * time.Hour, "3 h ago"}} {
		if got := ago(now.Add(-tc.d), now); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.d, got, tc.want)
		}
	}
	if ago(time.Time{}, now) != "never" {
		t.Error("zero time")
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := parseHeaders("A: 1\n\n B :  two words \n")
	if err != nil || len(h) != 2 || h["A"] != "1" || h["B"] != "two words" {
		t.Errorf("%v %v", h, err)
	}
	if _, err := parseHeaders("A: 1\nA: 2"); err == nil {
		t.Error("duplicate accepted")
	}
	if h, err := parseHeaders("  \n"); err != nil || h != nil {
		t.Errorf("blank: %v %v", h, err)
	}
}
