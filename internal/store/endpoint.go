package store

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// AuthKind says how a bridge authenticates to the remote server.
type AuthKind string

const (
	// AuthNone sends only the configured headers.
	AuthNone AuthKind = "none"
	// AuthBearer sends the keyring secret SecretToken as "Authorization: Bearer ...".
	AuthBearer AuthKind = "bearer"
	// AuthHeaders sends headers whose values reference keyring secrets
	// ("keyring:NAME" or "${keyring:NAME}").
	AuthHeaders AuthKind = "headers"
	// AuthOAuth leaves authorization to the relay's OAuth flow; its token set
	// lives in the keyring under SecretOAuth.
	AuthOAuth AuthKind = "oauth"
)

// Well-known secret names.
const (
	SecretToken = "token" // the bearer token of AuthBearer
	SecretOAuth = "oauth" // the OAuth token set of AuthOAuth (JSON, may be large)
)

// Endpoint is one named remote MCP server. It holds no secret values: header
// values may only reference secrets, which are expanded at send time by
// Store.ResolveHeaders.
type Endpoint struct {
	// ID is stable across renames; secrets are keyed by it.
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// Headers are sent with every request. Values may contain ${ENV_VAR}
	// and ${keyring:NAME} references, or be exactly "keyring:NAME".
	Headers map[string]string `json:"headers,omitempty"`
	Auth    AuthKind          `json:"auth"`
	Options Options           `json:"options,omitzero"`
	Tools   ToolFilter        `json:"tools,omitzero"`
}

// Options tune the connection to the remote server.
type Options struct {
	// AllowHTTP permits a plain http:// URL to a non-loopback host.
	AllowHTTP bool `json:"allow_http,omitempty"`
	// CAFile is an absolute path to extra PEM root certificates.
	CAFile string `json:"ca_file,omitempty"`
	// ConnectTimeout bounds dialing and TLS; zero means the relay's default.
	ConnectTimeout Duration `json:"connect_timeout,omitempty"`
	// RequestTimeout bounds one request without a stream; zero means the relay's default.
	RequestTimeout Duration `json:"request_timeout,omitempty"`
}

// Duration is a time.Duration written as "30s" so the file stays readable.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts "1m30s" strings; a bare number is taken as seconds
// because that is what a person typing a timeout usually means.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err2 := json.Unmarshal(b, &secs); err2 != nil {
			return fmt.Errorf("duration must be a string like \"30s\"")
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q (want e.g. \"30s\")", s)
	}
	*d = Duration(v)
	return nil
}

// ToolFilter limits which remote tools a client sees and may call. Patterns
// are path.Match globs ("*" does not cross "/").
type ToolFilter struct {
	// Allow, when not empty, admits only tools matching one of its patterns.
	Allow []string `json:"allow,omitempty"`
	// Deny removes matching tools; it wins over Allow.
	Deny []string `json:"deny,omitempty"`
}

// Allowed reports whether the tool called name passes the filter. The zero
// filter allows everything.
func (f ToolFilter) Allowed(name string) bool {
	for _, p := range f.Deny {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, p := range f.Allow {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// IsZero reports whether the filter lets everything through.
func (f ToolFilter) IsZero() bool { return len(f.Allow) == 0 && len(f.Deny) == 0 }

// ValidationError says what is wrong with one field of an endpoint. Its text
// is meant for people.
type ValidationError struct {
	Endpoint string // name, or "" when the name itself is missing
	Field    string // e.g. "url", "headers.X-Api-Key"
	Problem  string
}

func (e *ValidationError) Error() string {
	if e.Endpoint == "" {
		return fmt.Sprintf("endpoint: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("endpoint %q: %s: %s", e.Endpoint, e.Field, e.Problem)
}

var (
	nameRE       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	secretNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Validate checks one endpoint on its own (not name uniqueness, which
// Config.Validate checks).
func (ep *Endpoint) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ValidationError{Endpoint: ep.Name, Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if ep.Name == "" {
		return bad("name", "is required")
	}
	if !nameRE.MatchString(ep.Name) {
		return bad("name", "use up to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if ep.ID == "" {
		return bad("id", "is required")
	}
	if ep.URL == "" {
		return bad("url", "is required")
	}
	u, err := url.Parse(ep.URL)
	if err != nil || u.Host == "" {
		return bad("url", "%q is not an absolute URL like https://host/mcp", ep.URL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !ep.Options.AllowHTTP && !isLoopback(u.Hostname()) {
			return bad("url", "plain http to %s sends credentials unencrypted; use https or set allow_http", u.Hostname())
		}
	default:
		return bad("url", "scheme must be https or http, not %q", u.Scheme)
	}
	if u.User != nil {
		return bad("url", "must not contain a user or password; store credentials with 'mcpbridge secret set'")
	}
	switch ep.Auth {
	case AuthNone, AuthBearer, AuthHeaders, AuthOAuth:
	case "":
		return bad("auth", "is required (none, bearer, headers or oauth)")
	default:
		return bad("auth", "unknown kind %q (want none, bearer, headers or oauth)", ep.Auth)
	}
	for k, v := range ep.Headers {
		f := "headers." + k
		if !headerNameRE.MatchString(k) {
			return bad(f, "is not a valid header name")
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return bad(f, "value must be one line")
		}
		if ep.Auth == AuthBearer && strings.EqualFold(k, "Authorization") {
			return bad(f, "auth bearer sets Authorization itself; remove this header or use auth headers")
		}
		if _, err := parseValue(v); err != nil {
			return bad(f, "%v", err)
		}
	}
	if ep.Options.CAFile != "" && !filepath.IsAbs(ep.Options.CAFile) {
		return bad("options.ca_file", "must be an absolute path")
	}
	if ep.Options.ConnectTimeout < 0 {
		return bad("options.connect_timeout", "must not be negative")
	}
	if ep.Options.RequestTimeout < 0 {
		return bad("options.request_timeout", "must not be negative")
	}
	for _, list := range []struct {
		field string
		pats  []string
	}{{"tools.allow", ep.Tools.Allow}, {"tools.deny", ep.Tools.Deny}} {
		for _, p := range list.pats {
			if p == "" {
				return bad(list.field, "empty pattern")
			}
			if _, err := path.Match(p, ""); err != nil {
				return bad(list.field, "bad glob %q", p)
			}
		}
	}
	return nil
}

// SecretNames lists the keyring secrets this endpoint uses, so callers can
// tell whether they are stored (the keyring itself cannot be listed).
func (ep *Endpoint) SecretNames() []string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	switch ep.Auth {
	case AuthBearer:
		add(SecretToken)
	case AuthOAuth:
		add(SecretOAuth)
	}
	for _, k := range sortedKeys(ep.Headers) {
		parts, err := parseValue(ep.Headers[k])
		if err != nil {
			continue
		}
		for _, p := range parts {
			if p.kind == refKeyring {
				add(p.text)
			}
		}
	}
	return names
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidName reports whether s may be used as an endpoint name.
func ValidName(s string) bool { return nameRE.MatchString(s) }
