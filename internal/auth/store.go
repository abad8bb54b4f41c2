package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// Credentials is everything sign-in keeps for one endpoint: the current
// token set and the client registrations, one per authorization server.
// It holds secrets: keep it in the OS keyring, never in files or logs.
type Credentials struct {
	// Token is the current token set; nil when signed out.
	Token *oauth2.Token `json:"token,omitempty"`
	// Issuer is the authorization server that issued Token.
	Issuer string `json:"issuer,omitempty"`
	// Resource is the RFC 8707 resource Token was issued for.
	Resource string `json:"resource,omitempty"`
	// TokenURL is Issuer's token endpoint, kept so a refresh needs no
	// discovery.
	TokenURL string `json:"token_url,omitempty"`
	// Scopes are the scopes asked for when Token was obtained.
	Scopes []string `json:"scopes,omitempty"`
	// Clients are the client registrations, keyed by issuer.
	Clients map[string]Client `json:"clients,omitempty"`
}

// Client is one client registration at an authorization server.
type Client struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret,omitempty"`
	// AuthMethod is the token_endpoint_auth_method: none,
	// client_secret_basic or client_secret_post.
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// RedirectURI is the loopback redirect URI registered, if any.
	RedirectURI string `json:"redirect_uri,omitempty"`
	// Dynamic is true for a registration made by RFC 7591, which may be
	// replaced by a new one (for another callback port).
	Dynamic bool `json:"dynamic,omitempty"`
}

func (c *Credentials) clone() *Credentials {
	if c == nil {
		return &Credentials{}
	}
	out := *c
	if c.Token != nil {
		t := *c.Token
		out.Token = &t
	}
	out.Scopes = slices.Clone(c.Scopes)
	out.Clients = maps.Clone(c.Clients)
	return &out
}

// TokenStore keeps the Credentials of one endpoint. Methods may be called
// concurrently.
type TokenStore interface {
	// Load returns the stored credentials, or nil and no error when there
	// are none.
	Load(ctx context.Context) (*Credentials, error)
	// Save replaces the stored credentials.
	Save(ctx context.Context, c *Credentials) error
}

// MemoryStore is a TokenStore in memory, for tests and for sessions that
// must not persist anything. The zero value is ready to use.
type MemoryStore struct {
	mu sync.Mutex
	c  *Credentials
}

// Load implements TokenStore.
func (m *MemoryStore) Load(context.Context) (*Credentials, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		return nil, nil
	}
	return m.c.clone(), nil
}

// Save implements TokenStore.
func (m *MemoryStore) Save(_ context.Context, c *Credentials) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.c = c.clone()
	return nil
}

// Secrets is the part of *store.Store that KeyringStore uses.
type Secrets interface {
	Secret(ctx context.Context, endpointID, name string) (string, error)
	SetSecret(ctx context.Context, endpointID, name, value string) error
	DeleteSecret(ctx context.Context, endpointID, name string) error
}

// KeyringStore keeps Credentials as JSON in the keyring secret
// store.SecretOAuth of one endpoint (chunked by the store where the
// platform needs it).
type KeyringStore struct {
	Secrets    Secrets
	EndpointID string
}

// NewKeyringStore returns the TokenStore of endpoint endpointID in s.
func NewKeyringStore(s Secrets, endpointID string) *KeyringStore {
	return &KeyringStore{Secrets: s, EndpointID: endpointID}
}

// storedVersion tags the JSON layout, so a later layout can tell old items.
const storedVersion = 1

type stored struct {
	Version int `json:"v"`
	*Credentials
}

// Load implements TokenStore.
func (k *KeyringStore) Load(ctx context.Context) (*Credentials, error) {
	v, err := k.Secrets.Secret(ctx, k.EndpointID, store.SecretOAuth)
	if errors.Is(err, store.ErrSecretNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := stored{Credentials: &Credentials{}}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		// Never quote the value: it is a token set.
		return nil, errors.New("reading the stored sign-in: not valid JSON; sign in again")
	}
	if s.Version != storedVersion {
		return nil, fmt.Errorf("reading the stored sign-in: unknown layout version %d; sign in again", s.Version)
	}
	return s.Credentials, nil
}

// Save implements TokenStore. Saving nil or empty credentials deletes the
// item.
func (k *KeyringStore) Save(ctx context.Context, c *Credentials) error {
	if c == nil || (c.Token == nil && len(c.Clients) == 0) {
		err := k.Secrets.DeleteSecret(ctx, k.EndpointID, store.SecretOAuth)
		if errors.Is(err, store.ErrSecretNotFound) {
			return nil
		}
		return err
	}
	b, err := json.Marshal(stored{Version: storedVersion, Credentials: c})
	if err != nil {
		return fmt.Errorf("encoding the sign-in: %w", err)
	}
	return k.Secrets.SetSecret(ctx, k.EndpointID, store.SecretOAuth, string(b))
}
