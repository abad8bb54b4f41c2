package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// client picks the client registration for a sign-in (A3): the
// pre-registered client, a Client ID Metadata Document, a stored dynamic
// registration for this redirect URI, or a new dynamic registration.
func (o *OAuth) client(ctx context.Context, meta *serverMetadata, stored Client, redirect string) (Client, error) {
	if o.opts.ClientID != "" {
		return Client{
			ID:          o.opts.ClientID,
			Secret:      o.opts.ClientSecret,
			AuthMethod:  authMethod(meta, o.opts.ClientSecret != ""),
			RedirectURI: redirect,
		}, nil
	}
	if o.opts.ClientMetadataURL != "" && meta.ClientIDMetadataDocumentSupported {
		return Client{ID: o.opts.ClientMetadataURL, AuthMethod: "none", RedirectURI: redirect}, nil
	}
	if stored.Dynamic && stored.ID != "" && stored.RedirectURI == redirect {
		return stored, nil
	}
	if meta.RegistrationEndpoint != "" {
		return o.register(ctx, meta, redirect)
	}
	return Client{}, &store.UserError{
		Msg: fmt.Sprintf("The authorization server %s does not let mcpbridge register itself; register a client there with redirect URI %s and configure its client id.", meta.Issuer, redirect),
		Err: fmt.Errorf("%w at %s", ErrRegistration, meta.Issuer),
	}
}

// authMethod chooses how a client authenticates at the token endpoint,
// from what the server supports (RFC 8414 default: client_secret_basic).
func authMethod(meta *serverMetadata, hasSecret bool) string {
	supported := meta.TokenEndpointAuthMethodsSupported
	if len(supported) == 0 {
		supported = []string{"client_secret_basic"}
	}
	if !hasSecret {
		return "none"
	}
	for _, m := range []string{"client_secret_basic", "client_secret_post"} {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return "client_secret_basic"
}

type registrationRequest struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
}

type registrationResponse struct {
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// register makes a dynamic client registration (RFC 7591) for a native
// client with a loopback redirect URI.
func (o *OAuth) register(ctx context.Context, meta *serverMetadata, redirect string) (Client, error) {
	// A public client unless the server only takes confidential ones.
	method := "none"
	if s := meta.TokenEndpointAuthMethodsSupported; len(s) > 0 && !slices.Contains(s, "none") {
		method = authMethod(meta, true)
	}
	body, err := json.Marshal(registrationRequest{
		ClientName:              o.opts.ClientName,
		RedirectURIs:            []string{redirect},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: method,
		ApplicationType:         "native",
	})
	if err != nil {
		return Client{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return Client{}, fmt.Errorf("%w: %w", ErrRegistration, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := o.hc.Do(req)
	if err != nil {
		return Client{}, fmt.Errorf("%w: %w", ErrRegistration, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return Client{}, fmt.Errorf("%w: %w", ErrRegistration, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(b, &e)
		return Client{}, &store.UserError{
			Msg: fmt.Sprintf("The authorization server %s refused to register mcpbridge (HTTP %d %s %s).", meta.Issuer, resp.StatusCode, e.Error, e.Description),
			Err: fmt.Errorf("%w: registration answered %s", ErrRegistration, resp.Status),
		}
	}
	var r registrationResponse
	if err := json.Unmarshal(b, &r); err != nil || r.ClientID == "" {
		return Client{}, fmt.Errorf("%w: registration answer has no client_id", ErrRegistration)
	}
	c := Client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.TokenEndpointAuthMethod, RedirectURI: redirect, Dynamic: true}
	if c.AuthMethod == "" {
		c.AuthMethod = method // what was asked for stands
	}
	o.log.Info("oauth: registered", "issuer", meta.Issuer, "auth_method", c.AuthMethod)
	return c, nil
}
