package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zalando/go-keyring"
)

// KeyringService is the service name of every mcpbridge keyring item.
const KeyringService = "mcpbridge"

// DefaultKeyringTimeout bounds one keyring call. A locked keyring may wait
// for a password prompt that never comes (or no prompter exists), so the
// call must not be allowed to hang the relay or the tray.
const DefaultKeyringTimeout = 3 * time.Second

// chunkMarker starts the value of an item whose secret is split over
// several items because it is bigger than the platform allows per item.
const chunkMarker = "\x00mcpbridge-chunked:v1:"

// backend is the keyring; tests replace it to fake slow or odd keyrings.
type backend interface {
	Get(service, user string) (string, error)
	Set(service, user, value string) error
	Delete(service, user string) error
}

type osKeyring struct{}

func (osKeyring) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (osKeyring) Set(service, user, value string) error    { return keyring.Set(service, user, value) }
func (osKeyring) Delete(service, user string) error        { return keyring.Delete(service, user) }

// defaultChunkSize stays under each platform's per-item limit: Windows
// Credential Manager keeps 2,560 bytes; go-keyring on macOS passes the
// base64 of the value on a command line capped at 4 KiB; the Secret
// Service has no hard limit.
func defaultChunkSize() int {
	switch runtime.GOOS {
	case "windows":
		return 2560
	case "darwin":
		return 2048
	default:
		return 64 << 10
	}
}

func (s *Store) backend() backend {
	if s.kr != nil {
		return s.kr
	}
	return osKeyring{}
}

func (s *Store) chunk() int {
	if s.chunkSize > 0 {
		return s.chunkSize
	}
	return defaultChunkSize()
}

func itemUser(endpointID, name string) string { return endpointID + "/" + name }

func chunkUser(endpointID, name string, i int) string {
	return itemUser(endpointID, name) + "#" + strconv.Itoa(i)
}

// call runs one keyring operation with a deadline. On timeout the
// goroutine is abandoned: go-keyring calls cannot be cancelled, and a
// stuck D-Bus call is better leaked than waited for. It is safe to call
// from any goroutine, but never call it on a UI thread: it may take the
// whole timeout.
func (s *Store) call(ctx context.Context, op string, fn func() error) error {
	timeout := s.KeyringTimeout
	if timeout <= 0 {
		timeout = DefaultKeyringTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return s.keyringErr(op, err)
	case <-cctx.Done():
		if ctx.Err() != nil {
			return fmt.Errorf("keyring %s: %w", op, ctx.Err())
		}
		s.logger.Warn("keyring did not answer", "op", op, "timeout", timeout)
		return &UserError{
			Msg: fmt.Sprintf("The system keyring did not answer within %s; unlock it and try again, or put the secret in an environment variable and reference it as ${VAR} in a header.", timeout),
			Err: fmt.Errorf("keyring %s: %w: timed out after %s", op, ErrKeyringUnavailable, timeout),
		}
	}
}

func (s *Store) keyringErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keyring.ErrNotFound):
		return fmt.Errorf("keyring %s: %w", op, ErrSecretNotFound)
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return fmt.Errorf("keyring %s: secret too big for this keyring: %w", op, err)
	}
	// The cause (D-Bus error text, OS error) is for logs; people get
	// what to do.
	s.logger.Warn("keyring unavailable", "op", op, "err", err)
	return &UserError{Msg: unavailableMsg(err), Err: fmt.Errorf("keyring %s: %w: %v", op, ErrKeyringUnavailable, err)}
}

func unavailableMsg(cause error) string {
	if c := strings.ToLower(cause.Error()); strings.Contains(c, "unlock") || strings.Contains(c, "locked") || strings.Contains(c, "prompt") {
		return "The system keyring is locked and no unlock prompt could be shown; unlock it (for example by logging in to the desktop) and try again, or put the secret in an environment variable and reference it as ${VAR} in a header."
	}
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return "No Secret Service keyring is available (needs a D-Bus session with gnome-keyring or KeePassXC running and unlocked); start one, or put the secret in an environment variable and reference it as ${VAR} in a header."
	case "darwin":
		return "The macOS keychain could not be used; unlock your login keychain, or put the secret in an environment variable and reference it as ${VAR} in a header."
	case "windows":
		return "Windows Credential Manager could not be used; sign in to your desktop session, or put the secret in an environment variable and reference it as ${VAR} in a header."
	}
	return "No system keyring is available on this platform; put the secret in an environment variable and reference it as ${VAR} in a header."
}

func checkSecretKey(endpointID, name string) error {
	if endpointID == "" {
		return fmt.Errorf("keyring: empty endpoint id")
	}
	if !secretNameRE.MatchString(name) {
		return &UserError{Msg: fmt.Sprintf("Bad secret name %q: use letters, digits, '.', '_' or '-'.", name), Err: fmt.Errorf("keyring: bad secret name %q", name)}
	}
	return nil
}

func (s *Store) get(ctx context.Context, user string) (string, error) {
	var v string
	err := s.call(ctx, "get", func() error {
		var err error
		v, err = s.backend().Get(KeyringService, user)
		return err
	})
	return v, err
}

func (s *Store) set(ctx context.Context, user, value string) error {
	return s.call(ctx, "set", func() error { return s.backend().Set(KeyringService, user, value) })
}

func (s *Store) del(ctx context.Context, user string) error {
	return s.call(ctx, "delete", func() error { return s.backend().Delete(KeyringService, user) })
}

func parseMarker(v string) (n int, ok bool) {
	rest, ok := strings.CutPrefix(v, chunkMarker)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// Secret returns the secret name of the endpoint with id endpointID, joining
// chunks transparently. A missing secret is ErrSecretNotFound; no usable
// keyring is a *UserError wrapping ErrKeyringUnavailable.
func (s *Store) Secret(ctx context.Context, endpointID, name string) (string, error) {
	if err := checkSecretKey(endpointID, name); err != nil {
		return "", err
	}
	v, err := s.get(ctx, itemUser(endpointID, name))
	if err != nil {
		return "", err
	}
	n, chunked := parseMarker(v)
	if !chunked {
		return v, nil
	}
	var b strings.Builder
	for i := 1; i <= n; i++ {
		part, err := s.get(ctx, chunkUser(endpointID, name, i))
		if err != nil {
			if errors.Is(err, ErrSecretNotFound) {
				return "", fmt.Errorf("secret %s: part %d of %d missing: %w", name, i, n, ErrSecretNotFound)
			}
			return "", err
		}
		b.WriteString(part)
	}
	return b.String(), nil
}

// HasSecret reports whether the secret is stored, without reading chunks.
func (s *Store) HasSecret(ctx context.Context, endpointID, name string) (bool, error) {
	if err := checkSecretKey(endpointID, name); err != nil {
		return false, err
	}
	_, err := s.get(ctx, itemUser(endpointID, name))
	if errors.Is(err, ErrSecretNotFound) {
		return false, nil
	}
	return err == nil, err
}

// SetSecret stores value as the secret name of the endpoint with id
// endpointID. Values bigger than the platform's per-item limit (OAuth
// token sets on Windows) are split over several items; the main item is
// written last, so a reader sees either the old or the complete new value.
func (s *Store) SetSecret(ctx context.Context, endpointID, name, value string) error {
	if err := checkSecretKey(endpointID, name); err != nil {
		return err
	}
	if value == "" {
		return &UserError{Msg: "The secret is empty; nothing was stored.", Err: errors.New("keyring set: empty secret")}
	}
	oldChunks, err := s.chunkCount(ctx, endpointID, name)
	if err != nil {
		return err
	}
	size := s.chunk()
	var parts []string
	if len(value) > size || strings.HasPrefix(value, chunkMarker) {
		parts = split(value, size)
	}
	for i, p := range parts {
		if err := s.set(ctx, chunkUser(endpointID, name, i+1), p); err != nil {
			return err
		}
	}
	main := value
	if parts != nil {
		main = chunkMarker + strconv.Itoa(len(parts))
	}
	if err := s.set(ctx, itemUser(endpointID, name), main); err != nil {
		return err
	}
	s.dropChunks(ctx, endpointID, name, len(parts)+1, oldChunks)
	s.logger.Debug("secret stored", "endpoint_id", endpointID, "name", name, "parts", max(len(parts), 1))
	return nil
}

// DeleteSecret removes the secret and its chunks; ErrSecretNotFound if
// there was none.
func (s *Store) DeleteSecret(ctx context.Context, endpointID, name string) error {
	if err := checkSecretKey(endpointID, name); err != nil {
		return err
	}
	n, err := s.chunkCount(ctx, endpointID, name)
	if err != nil {
		return err
	}
	if err := s.del(ctx, itemUser(endpointID, name)); err != nil {
		return err
	}
	s.dropChunks(ctx, endpointID, name, 1, n)
	return nil
}

// DeleteSecrets removes every secret ep uses (see Endpoint.SecretNames),
// ignoring ones that are not stored.
func (s *Store) DeleteSecrets(ctx context.Context, ep Endpoint) error {
	var errs []error
	for _, n := range ep.SecretNames() {
		if err := s.DeleteSecret(ctx, ep.ID, n); err != nil && !errors.Is(err, ErrSecretNotFound) {
			errs = append(errs, err)
			if errors.Is(err, ErrKeyringUnavailable) {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// chunkCount is how many chunk items the stored secret has (0 when it is
// stored whole or not at all).
func (s *Store) chunkCount(ctx context.Context, endpointID, name string) (int, error) {
	v, err := s.get(ctx, itemUser(endpointID, name))
	if errors.Is(err, ErrSecretNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _ := parseMarker(v)
	return n, nil
}

// dropChunks deletes chunk items from..to, best effort: a leftover chunk
// is unreachable and harmless.
func (s *Store) dropChunks(ctx context.Context, endpointID, name string, from, to int) {
	for i := from; i <= to; i++ {
		if err := s.del(ctx, chunkUser(endpointID, name, i)); err != nil && !errors.Is(err, ErrSecretNotFound) {
			s.logger.Debug("leftover secret part not deleted", "name", name, "part", i, "err", err)
		}
	}
}

// split cuts v into pieces of at most size bytes without splitting a
// UTF-8 sequence, since some keyrings store values as text.
func split(v string, size int) []string {
	var out []string
	for len(v) > 0 {
		n := min(size, len(v))
		for n < len(v) && n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		if n == 0 {
			n = min(size, len(v))
		}
		out = append(out, v[:n])
		v = v[n:]
	}
	return out
}
