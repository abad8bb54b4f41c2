package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestResolveHeaders(t *testing.T) {
	ctx := context.Background()
	kr := &fakeKeyring{}
	s := newTestStore(t)
	s.kr = kr
	s.LookupEnv = func(k string) (string, bool) {
		v, ok := map[string]string{"TEAM": "blue", "EMPTY": ""}[k]
		return v, ok
	}
	id := uuid.NewString()
	s.SetSecret(ctx, id, "api", "k-123")
	s.SetSecret(ctx, id, SecretToken, "tok\n")

	ep := Endpoint{ID: id, Name: "w", Auth: AuthBearer, Headers: map[string]string{
		"X-Team":   "${TEAM}-team",
		"X-Empty":  "${EMPTY}",
		"X-Key":    "keyring:api",
		"X-Inline": "Key ${keyring:api}; literal $${TEAM}",
		"X-Plain":  "plain",
	}}
	h, err := s.ResolveHeaders(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"X-Team": "blue-team", "X-Empty": "", "X-Key": "k-123",
		"X-Inline": "Key k-123; literal ${TEAM}", "X-Plain": "plain",
		"Authorization": "Bearer tok",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}

	ep.Headers = map[string]string{"X": "${NOPE}"}
	_, err = s.ResolveHeaders(ctx, ep)
	if msg, _ := UserMessage(err); !errors.Is(err, ErrEnvNotSet) || !strings.Contains(msg, "NOPE") {
		t.Errorf("unset env: %v", err)
	}
	ep.Headers = map[string]string{"X": "keyring:missing"}
	_, err = s.ResolveHeaders(ctx, ep)
	if msg, _ := UserMessage(err); !errors.Is(err, ErrSecretNotFound) || !strings.Contains(msg, "mcpbridge secret set w --key missing") {
		t.Errorf("missing secret: %v", err)
	}
	for _, e := range []error{err} {
		if strings.Contains(e.Error(), "k-123") || strings.Contains(e.Error(), "tok") {
			t.Errorf("error leaks a secret: %v", e)
		}
	}
}

func TestSecretNames(t *testing.T) {
	ep := Endpoint{Auth: AuthBearer, Headers: map[string]string{"A": "keyring:x", "B": "${keyring:y} ${keyring:x}", "C": "${ENV}"}}
	if got := strings.Join(ep.SecretNames(), ","); got != "token,x,y" {
		t.Errorf("SecretNames = %s", got)
	}
}

func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"keyring:a", "${A}", "x ${keyring:b} $${c}", "${", "$$"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		parts, err := parseValue(v)
		if err != nil {
			return
		}
		for _, p := range parts {
			if p.kind != refLiteral && p.text == "" {
				t.Fatalf("empty reference in %q", v)
			}
		}
	})
}
