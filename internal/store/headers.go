package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

type refKind int

const (
	refLiteral refKind = iota
	refEnv
	refKeyring
)

type valuePart struct {
	kind refKind
	text string // literal text, env var name or secret name
}

// parseValue splits a header value into literal text and references.
// A value that is exactly "keyring:NAME" is a secret; inside a longer value
// use ${keyring:NAME}. ${VAR} is an environment variable; "$${" is a
// literal "${".
func parseValue(v string) ([]valuePart, error) {
	if name, ok := strings.CutPrefix(v, "keyring:"); ok {
		if !secretNameRE.MatchString(name) {
			return nil, fmt.Errorf("bad secret name %q in keyring reference", name)
		}
		return []valuePart{{refKeyring, name}}, nil
	}
	var parts []valuePart
	var lit strings.Builder
	for i := 0; i < len(v); {
		if strings.HasPrefix(v[i:], "$${") {
			lit.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(v[i:], "${") {
			lit.WriteByte(v[i])
			i++
			continue
		}
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unclosed ${ in value (write $${ for a literal ${)")
		}
		ref := v[i+2 : i+end]
		i += end + 1
		if lit.Len() > 0 {
			parts = append(parts, valuePart{refLiteral, lit.String()})
			lit.Reset()
		}
		if name, ok := strings.CutPrefix(ref, "keyring:"); ok {
			if !secretNameRE.MatchString(name) {
				return nil, fmt.Errorf("bad secret name %q in ${keyring:...}", name)
			}
			parts = append(parts, valuePart{refKeyring, name})
			continue
		}
		if !envNameRE.MatchString(ref) {
			return nil, fmt.Errorf("bad environment variable name %q in ${...}", ref)
		}
		parts = append(parts, valuePart{refEnv, ref})
	}
	if lit.Len() > 0 {
		parts = append(parts, valuePart{refLiteral, lit.String()})
	}
	return parts, nil
}

// ResolveHeaders returns the headers to send to ep, with ${ENV_VAR} and
// keyring references expanded and, for AuthBearer, the Authorization
// header added. Call it at send time (not once at start) so rotated
// secrets and environment changes are picked up; never log its result.
// Errors name the header and the missing variable or secret, never a value.
func (s *Store) ResolveHeaders(ctx context.Context, ep Endpoint) (http.Header, error) {
	h := make(http.Header, len(ep.Headers)+1)
	secrets := map[string]string{}
	secret := func(name string) (string, error) {
		if v, ok := secrets[name]; ok {
			return v, nil
		}
		v, err := s.Secret(ctx, ep.ID, name)
		if err != nil {
			return "", err
		}
		secrets[name] = v
		return v, nil
	}
	for _, k := range sortedKeys(ep.Headers) {
		parts, err := parseValue(ep.Headers[k])
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		var b strings.Builder
		for _, p := range parts {
			switch p.kind {
			case refLiteral:
				b.WriteString(p.text)
			case refEnv:
				v, ok := s.lookupEnv(p.text)
				if !ok {
					return nil, &UserError{
						Msg: fmt.Sprintf("Header %s of endpoint %q needs environment variable %s, which is not set.", k, ep.Name, p.text),
						Err: fmt.Errorf("header %s: env %s: %w", k, p.text, ErrEnvNotSet),
					}
				}
				b.WriteString(v)
			case refKeyring:
				v, err := secret(p.text)
				if err != nil {
					return nil, secretErr(ep, p.text, fmt.Sprintf("header %s", k), err)
				}
				b.WriteString(v)
			}
		}
		v := b.String()
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("header %s: expanded value contains a line break", k)
		}
		h.Set(k, v)
	}
	if ep.Auth == AuthBearer {
		tok, err := secret(SecretToken)
		if err != nil {
			return nil, secretErr(ep, SecretToken, "bearer auth", err)
		}
		tok = strings.TrimSpace(tok)
		if strings.ContainsAny(tok, "\r\n\x00") {
			return nil, fmt.Errorf("bearer token contains a line break")
		}
		h.Set("Authorization", "Bearer "+tok)
	}
	return h, nil
}

func secretErr(ep Endpoint, name, what string, err error) error {
	if errors.Is(err, ErrSecretNotFound) {
		return &UserError{
			Msg: fmt.Sprintf("Endpoint %q has no secret %q in the keyring; run: mcpbridge secret set %s --key %s", ep.Name, name, ep.Name, name),
			Err: fmt.Errorf("%s: secret %s: %w", what, name, err),
		}
	}
	return fmt.Errorf("%s: secret %s: %w", what, name, err)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
