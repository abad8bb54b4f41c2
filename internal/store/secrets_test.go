package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// fakeKeyring is an in-memory backend for tests about chunking and
// timeouts; the real Secret Service is exercised by the keyring tests.
type fakeKeyring struct {
	mu    sync.Mutex
	items map[string]string
	limit int           // per-item limit like Windows; 0 = none
	block chan struct{} // if set, every call waits for it
	err   error         // if set, every call fails with it
}

func (f *fakeKeyring) wait() error {
	if f.block != nil {
		<-f.block
	}
	return f.err
}

func (f *fakeKeyring) Get(service, user string) (string, error) {
	if err := f.wait(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[service+"|"+user]
	if !ok {
		return "", keyringErrNotFound
	}
	return v, nil
}

func (f *fakeKeyring) Set(service, user, value string) error {
	if err := f.wait(); err != nil {
		return err
	}
	if f.limit > 0 && len(value) > f.limit {
		return errTooBig
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.items == nil {
		f.items = map[string]string{}
	}
	f.items[service+"|"+user] = value
	return nil
}

func (f *fakeKeyring) Delete(service, user string) error {
	if err := f.wait(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[service+"|"+user]; !ok {
		return keyringErrNotFound
	}
	delete(f.items, service+"|"+user)
	return nil
}

func (f *fakeKeyring) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.items)
}

func TestSecretChunkingFake(t *testing.T) {
	ctx := context.Background()
	kr := &fakeKeyring{limit: 100}
	s := newTestStore(t)
	s.kr, s.chunkSize = kr, 100
	id := uuid.NewString()

	big := strings.Repeat("é0123456789", 40) // 2-byte runes straddle chunk borders
	if err := s.SetSecret(ctx, id, SecretOAuth, big); err != nil {
		t.Fatal(err)
	}
	if kr.len() < 5 {
		t.Fatalf("big secret stored in %d items, want it split", kr.len())
	}
	for k, v := range kr.items {
		if !strings.HasPrefix(v, chunkMarker) && !isValidUTF8(v) {
			t.Errorf("item %s is not valid UTF-8", k)
		}
	}
	got, err := s.Secret(ctx, id, SecretOAuth)
	if err != nil || got != big {
		t.Fatalf("Secret = %d bytes, %v; want the %d bytes stored", len(got), err, len(big))
	}
	// Overwriting with a small value removes the old chunks.
	if err := s.SetSecret(ctx, id, SecretOAuth, "small"); err != nil {
		t.Fatal(err)
	}
	if kr.len() != 1 {
		t.Errorf("%d items after shrinking, want 1", kr.len())
	}
	// A value that looks like our marker is stored chunked, not confused.
	tricky := chunkMarker + "3"
	if err := s.SetSecret(ctx, id, "x", tricky); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Secret(ctx, id, "x"); err != nil || got != tricky {
		t.Fatalf("marker-like value = %q, %v", got, err)
	}
	if err := s.DeleteSecret(ctx, id, SecretOAuth); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSecret(ctx, id, "x"); err != nil {
		t.Fatal(err)
	}
	if kr.len() != 0 {
		t.Errorf("%d items left after delete", kr.len())
	}
	if err := s.DeleteSecret(ctx, id, "x"); !errors.Is(err, ErrSecretNotFound) {
		t.Errorf("deleting a missing secret: %v", err)
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestKeyringTimeout(t *testing.T) {
	kr := &fakeKeyring{block: make(chan struct{})}
	defer close(kr.block)
	s := newTestStore(t)
	s.kr = kr
	s.KeyringTimeout = 50 * time.Millisecond
	start := time.Now()
	_, err := s.Secret(context.Background(), uuid.NewString(), SecretToken)
	if time.Since(start) > 2*time.Second {
		t.Fatalf("keyring call took %v despite the deadline", time.Since(start))
	}
	if !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("err = %v, want ErrKeyringUnavailable", err)
	}
	msg, ok := UserMessage(err)
	if !ok || !strings.Contains(msg, "did not answer within 50ms") || !strings.Contains(msg, "${VAR}") {
		t.Errorf("user message = %q", msg)
	}
	// A caller's own cancellation is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Secret(ctx, uuid.NewString(), SecretToken); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
}

func TestKeyringErrorIsUserFacing(t *testing.T) {
	s := newTestStore(t)
	s.kr = &fakeKeyring{err: errors.New("org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.secrets was not provided by any .service files")}
	err := s.SetSecret(context.Background(), uuid.NewString(), SecretToken, "v")
	if !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("err = %v", err)
	}
	msg, _ := UserMessage(err)
	if strings.Contains(msg, "DBus") || !strings.Contains(msg, "${VAR}") || strings.Count(msg, ". ") > 0 {
		t.Errorf("message should be one plain sentence with what to do: %q", msg)
	}
}

// keyringStore returns a Store on the real OS keyring, skipping when none
// is reachable unless MCPBRIDGE_REQUIRE_KEYRING=1 (set by
// scripts/keyring-test.sh so CI cannot skip silently).
func keyringStore(t *testing.T) *Store {
	t.Helper()
	s := newTestStore(t)
	if _, err := s.HasSecret(context.Background(), uuid.NewString(), "probe"); err != nil {
		if os.Getenv("MCPBRIDGE_REQUIRE_KEYRING") == "1" {
			t.Fatalf("keyring required but unusable: %v", err)
		}
		t.Skipf("no usable keyring (run scripts/keyring-test.sh): %v", err)
	}
	return s
}

func TestKeyringRoundTrip(t *testing.T) {
	s := keyringStore(t)
	ctx := context.Background()
	id := uuid.NewString()
	t.Cleanup(func() { s.DeleteSecret(ctx, id, SecretToken) })

	if ok, err := s.HasSecret(ctx, id, SecretToken); err != nil || ok {
		t.Fatalf("HasSecret before set = %v, %v", ok, err)
	}
	if _, err := s.Secret(ctx, id, SecretToken); !errors.Is(err, ErrSecretNotFound) {
		t.Fatalf("Secret before set: %v", err)
	}
	for _, v := range []string{"s3cr3t", "with\nnewline and ünïcode"} {
		if err := s.SetSecret(ctx, id, SecretToken, v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Secret(ctx, id, SecretToken); err != nil || got != v {
			t.Fatalf("Secret = %q, %v; want %q", got, err, v)
		}
	}
	if ok, err := s.HasSecret(ctx, id, SecretToken); err != nil || !ok {
		t.Fatalf("HasSecret after set = %v, %v", ok, err)
	}
	// The value is stored under service "mcpbridge", keyed by id/name.
	if path, err := exec.LookPath("secret-tool"); err == nil {
		out, err := exec.Command(path, "lookup", "service", KeyringService, "username", id+"/"+SecretToken).Output()
		if err != nil || !strings.Contains(string(out), "ünïcode") {
			t.Errorf("secret-tool lookup = %q, %v", out, err)
		}
	}
	if err := s.DeleteSecret(ctx, id, SecretToken); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.HasSecret(ctx, id, SecretToken); ok {
		t.Fatal("secret still there after delete")
	}
}

func TestKeyringChunked(t *testing.T) {
	s := keyringStore(t)
	s.chunkSize = 2560 // the Windows limit, exercised against a real keyring
	ctx := context.Background()
	id := uuid.NewString()
	t.Cleanup(func() { s.DeleteSecret(ctx, id, SecretOAuth) })
	big := `{"access_token":"` + strings.Repeat("abcdefghij", 900) + `","refresh_token":"r"}`
	if err := s.SetSecret(ctx, id, SecretOAuth, big); err != nil {
		t.Fatal(err)
	}
	got, err := s.Secret(ctx, id, SecretOAuth)
	if err != nil || got != big {
		t.Fatalf("chunked secret: %d bytes, %v", len(got), err)
	}
	if n, err := s.chunkCount(ctx, id, SecretOAuth); err != nil || n != 4 {
		t.Errorf("chunkCount = %d, %v; want 4", n, err)
	}
	if err := s.SetSecret(ctx, id, SecretOAuth, "short"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.get(ctx, chunkUser(id, SecretOAuth, 1)); !errors.Is(err, ErrSecretNotFound) {
		t.Errorf("old chunk left behind: %v", err)
	}
	if err := s.DeleteSecret(ctx, id, SecretOAuth); err != nil {
		t.Fatal(err)
	}
}

func TestKeyringConcurrent(t *testing.T) {
	s := keyringStore(t)
	ctx := context.Background()
	id := uuid.NewString()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "k" + string(rune('a'+i))
			if err := s.SetSecret(ctx, id, name, "v"+name); err != nil {
				t.Error(err)
				return
			}
			if v, err := s.Secret(ctx, id, name); err != nil || v != "v"+name {
				t.Errorf("%s = %q, %v", name, v, err)
			}
			s.DeleteSecret(ctx, id, name)
		}()
	}
	wg.Wait()
}

// TestKeyringNoBus runs a child with the session bus pointing at a socket
// that does not exist: the error must be quick, ErrKeyringUnavailable, and
// one sentence saying what to do. A child is needed because godbus keeps
// the first session bus connection for the life of the process.
func TestKeyringNoBus(t *testing.T) {
	if os.Getenv("MCPBRIDGE_TEST_NOBUS_CHILD") == "1" {
		s := newTestStore(t)
		start := time.Now()
		err := s.SetSecret(context.Background(), uuid.NewString(), SecretToken, "v")
		if time.Since(start) > DefaultKeyringTimeout+time.Second {
			t.Fatalf("took %v", time.Since(start))
		}
		if !errors.Is(err, ErrKeyringUnavailable) {
			t.Fatalf("err = %v, want ErrKeyringUnavailable", err)
		}
		msg, _ := UserMessage(err)
		if !strings.Contains(msg, "Secret Service") || !strings.Contains(msg, "${VAR}") || strings.Contains(msg, "\n") {
			t.Fatalf("message = %q", msg)
		}
		return
	}
	if !isUnixLike() {
		t.Skip("Secret Service is a unix thing")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeyringNoBus$", "-test.v")
	cmd.Env = append(filterEnv(os.Environ(), "DBUS_SESSION_BUS_ADDRESS"),
		"MCPBRIDGE_TEST_NOBUS_CHILD=1",
		"DBUS_SESSION_BUS_ADDRESS=unix:path="+t.TempDir()+"/no-such-bus")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestKeyringLocked locks the login collection and checks that calls fail
// in time with a useful message. It cannot unlock the keyring again
// without a prompter, so scripts/keyring-test.sh runs it in its own
// session with MCPBRIDGE_KEYRING_LOCK_TEST=1.
func TestKeyringLocked(t *testing.T) {
	if os.Getenv("MCPBRIDGE_KEYRING_LOCK_TEST") != "1" {
		t.Skip("locks the keyring for good; run by scripts/keyring-test.sh in its own session")
	}
	s := keyringStore(t)
	ctx := context.Background()
	id := uuid.NewString()
	if err := s.SetSecret(ctx, id, SecretToken, "v"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.secrets",
		"/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock",
		"array:objpath:/org/freedesktop/secrets/collection/login").CombinedOutput()
	if err != nil {
		t.Fatalf("locking: %v\n%s", err, out)
	}
	s.KeyringTimeout = time.Second
	start := time.Now()
	_, err = s.Secret(ctx, id, SecretToken)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("locked keyring call took %v", d)
	}
	if !errors.Is(err, ErrKeyringUnavailable) {
		t.Fatalf("err = %v, want ErrKeyringUnavailable", err)
	}
	msg, _ := UserMessage(err)
	if !strings.Contains(msg, "${VAR}") || !strings.Contains(msg, "locked") && !strings.Contains(msg, "did not answer") {
		t.Fatalf("message = %q", msg)
	}
	t.Logf("locked keyring: %s (%v)", msg, errors.Unwrap(err))
}

func filterEnv(env []string, drop string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, drop+"=") {
			out = append(out, kv)
		}
	}
	return out
}
