package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// maxMetadata caps a metadata or registration document.
const maxMetadata = 1 << 20

// resourceMetadata is RFC 9728 protected resource metadata (the fields used).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is RFC 8414 / OpenID Connect discovery metadata (the fields
// used).
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

// getJSON GETs u and decodes a 200 JSON answer into v. found is false for
// a 4xx answer (nothing there: try the next location).
func (o *OAuth) getJSON(ctx context.Context, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(v); err != nil {
		return false, fmt.Errorf("GET %s: bad JSON: %w", u, err)
	}
	return true, nil
}

// wellKnown puts /.well-known/<name> between the origin and the path of u
// (RFC 8615 as RFC 8414 and RFC 9728 use it); an empty or "/" path gives
// the root document.
func wellKnown(u *url.URL, name string) string {
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/" + name + p
}

// fetchResourceMetadata finds the server's protected resource metadata
// (A1): the challenge's resource_metadata URL, else the path-aware
// well-known location, else the root one.
func (o *OAuth) fetchResourceMetadata(ctx context.Context, ch challenge) (*resourceMetadata, error) {
	server, err := url.Parse(o.opts.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	var tries []string
	if ch.resourceMetadata != "" {
		tries = append(tries, ch.resourceMetadata)
	}
	tries = append(tries, wellKnown(server, "oauth-protected-resource"))
	if root := server.Scheme + "://" + server.Host + "/.well-known/oauth-protected-resource"; !slices.Contains(tries, root) {
		tries = append(tries, root)
	}
	for _, u := range tries {
		var m resourceMetadata
		found, err := o.getJSON(ctx, u, &m)
		if err != nil {
			o.log.Debug("oauth: protected resource metadata", "url", u, "err", err)
			continue
		}
		if !found {
			continue
		}
		if !resourceMatches(m.Resource, server) {
			return nil, &store.UserError{
				Msg: fmt.Sprintf("The server's OAuth metadata is for %q, not for %s; refusing to sign in.", m.Resource, o.opts.ServerURL),
				Err: fmt.Errorf("%w: resource %q does not match %s", ErrMetadata, m.Resource, o.opts.ServerURL),
			}
		}
		if len(m.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("%w: protected resource metadata at %s names no authorization server", ErrMetadata, u)
		}
		o.log.Debug("oauth: protected resource metadata", "url", u, "resource", m.Resource, "issuer", m.AuthorizationServers[0])
		return &m, nil
	}
	return nil, nil
}

// resourceMatches reports whether the resource identifier res covers the
// server URL: same scheme and authority, and res's path is the server's
// path or a parent of it at a segment boundary. RFC 9728 section 3.3 asks
// for the resource the metadata was fetched for; MCP servers commonly name
// their origin (root metadata) or their exact endpoint.
func resourceMatches(res string, server *url.URL) bool {
	r, err := url.Parse(res)
	if err != nil || r.Host == "" || r.Fragment != "" || r.RawQuery != "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(hostPort(r), hostPort(server)) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(server.EscapedPath(), "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// canonicalResource is the server URL as an RFC 8707 resource when no
// metadata names one: no fragment, no trailing slash after a path.
func canonicalResource(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	u.Fragment = ""
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	if u.Path != "/" {
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = ""
	}
	return u.String()
}

// serverMetadataURLs lists where the metadata of issuer may be, in the
// order of A2.
func serverMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: bad issuer %q", ErrMetadata, issuer)
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}, nil
}

// fetchServerMetadata discovers the authorization server issuer (A2) and
// checks what sign-in needs of it (issuer match, S256).
func (o *OAuth) fetchServerMetadata(ctx context.Context, issuer string) (*serverMetadata, error) {
	urls, err := serverMetadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, u := range urls {
		var m serverMetadata
		found, err := o.getJSON(ctx, u, &m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !found {
			continue
		}
		if m.Issuer != issuer {
			return nil, &store.UserError{
				Msg: fmt.Sprintf("The authorization server's metadata names issuer %q, not %q; refusing to sign in.", m.Issuer, issuer),
				Err: fmt.Errorf("%w: issuer %q in %s does not match %q", ErrMetadata, m.Issuer, u, issuer),
			}
		}
		if m.AuthorizationEndpoint == "" || m.TokenEndpoint == "" {
			return nil, fmt.Errorf("%w: %s lacks authorization_endpoint or token_endpoint", ErrMetadata, u)
		}
		if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
			return nil, &store.UserError{
				Msg: fmt.Sprintf("The authorization server %s does not declare PKCE with S256, which sign-in requires.", issuer),
				Err: fmt.Errorf("%w: code_challenge_methods_supported %q lacks S256", ErrMetadata, m.CodeChallengeMethodsSupported),
			}
		}
		o.log.Debug("oauth: authorization server metadata", "url", u, "issuer", issuer)
		return &m, nil
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: authorization server metadata for %s: %w", ErrMetadata, issuer, errors.Join(errs...))
	}
	return nil, &store.UserError{
		Msg: fmt.Sprintf("The authorization server %s publishes no OAuth metadata.", issuer),
		Err: fmt.Errorf("%w: no authorization server metadata for %s", ErrMetadata, issuer),
	}
}
