package auth

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

func TestParseChallenge(t *testing.T) {
	tests := []struct {
		in   []string
		want challenge
	}{
		{[]string{`Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="read write"`},
			challenge{resourceMetadata: "https://a.example/.well-known/oauth-protected-resource/mcp", scope: "read write"}},
		{[]string{`Bearer error="insufficient_scope", scope="files:write", error_description="need \"more\""`},
			challenge{scope: "files:write", err: "insufficient_scope"}},
		{[]string{`Basic realm="x", Bearer scope=read`}, challenge{scope: "read"}},
		{[]string{`Negotiate abc==, Bearer realm="r", error=invalid_token`}, challenge{err: "invalid_token"}},
		{[]string{`Basic realm="x"`, `bearer scope="a"`}, challenge{scope: "a"}},
		{[]string{`Bearer`}, challenge{}},
		{nil, challenge{}},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.in {
			h.Add("WWW-Authenticate", v)
		}
		if got := parseChallenge(h); got != tt.want {
			t.Errorf("parseChallenge(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func FuzzParseWWWAuthenticate(f *testing.F) {
	f.Add(`Bearer resource_metadata="https://a/b", scope="x y"`)
	f.Add(`Negotiate abc==, Bearer realm="r\"q", error=invalid_token`)
	f.Add(`,,= "`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range parseWWWAuthenticate(s) {
			if c.scheme == "" {
				t.Fatalf("empty scheme from %q", s)
			}
		}
	})
}

func TestResourceMatches(t *testing.T) {
	server, _ := url.Parse("https://mcp.example.com:443/v1/mcp")
	for res, want := range map[string]bool{
		"https://mcp.example.com/v1/mcp":      true,
		"https://MCP.example.com/v1/mcp/":     true,
		"https://mcp.example.com":             true,
		"https://mcp.example.com/":            true,
		"https://mcp.example.com/v1":          true,
		"https://mcp.example.com/v":           false,
		"https://mcp.example.com/v1/mcp/more": false,
		"http://mcp.example.com/v1/mcp":       false,
		"https://mcp.example.com:8443/v1/mcp": false,
		"https://evil.example/v1/mcp":         false,
		"https://mcp.example.com/v1/mcp#x":    false,
		"":                                    false,
	} {
		if got := resourceMatches(res, server); got != want {
			t.Errorf("resourceMatches(%q) = %v, want %v", res, got, want)
		}
	}
}

func TestServerMetadataURLs(t *testing.T) {
	got, _ := serverMetadataURLs("https://auth.example.com/tenant1")
	want := []string{
		"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
		"https://auth.example.com/.well-known/openid-configuration/tenant1",
		"https://auth.example.com/tenant1/.well-known/openid-configuration",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with a path: %q, want %q", got, want)
	}
	got, _ = serverMetadataURLs("https://auth.example.com")
	want = []string{
		"https://auth.example.com/.well-known/oauth-authorization-server",
		"https://auth.example.com/.well-known/openid-configuration",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("without a path: %q, want %q", got, want)
	}
}

func TestAuthMethod(t *testing.T) {
	m := func(s ...string) *serverMetadata { return &serverMetadata{TokenEndpointAuthMethodsSupported: s} }
	for _, tt := range []struct {
		meta   *serverMetadata
		secret bool
		want   string
	}{
		{m(), false, "none"},
		{m(), true, "client_secret_basic"},
		{m("client_secret_post"), true, "client_secret_post"},
		{m("client_secret_post", "client_secret_basic"), true, "client_secret_basic"},
		{m("none"), false, "none"},
	} {
		if got := authMethod(tt.meta, tt.secret); got != tt.want {
			t.Errorf("authMethod(%v, %v) = %q, want %q", tt.meta.TokenEndpointAuthMethodsSupported, tt.secret, got, tt.want)
		}
	}
}

func TestKeyringStore(t *testing.T) {
	keyring.MockInit()
	st := store.New(t.TempDir(), nil)
	ks := NewKeyringStore(st, "ep-1")
	ctx := t.Context()
	if c, err := ks.Load(ctx); err != nil || c != nil {
		t.Fatalf("Load of nothing = %v, %v; want nil, nil", c, err)
	}
	want := &Credentials{
		Token:    &oauth2.Token{AccessToken: strings.Repeat("a", 5000), RefreshToken: "r", TokenType: "Bearer"},
		Issuer:   "https://as.example",
		Resource: "https://mcp.example/mcp",
		TokenURL: "https://as.example/token",
		Scopes:   []string{"read"},
		Clients:  map[string]Client{"https://as.example": {ID: "c", RedirectURI: "http://127.0.0.1:1234/callback", Dynamic: true, AuthMethod: "none"}},
	}
	if err := ks.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	raw, err := st.Secret(ctx, "ep-1", store.SecretOAuth)
	if err != nil || !strings.Contains(raw, `"v":1`) {
		t.Fatalf("stored item = %.40q…, %v", raw, err)
	}
	got, err := ks.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Token.AccessToken != want.Token.AccessToken || got.Clients["https://as.example"] != want.Clients["https://as.example"] || got.Resource != want.Resource {
		t.Fatalf("round trip lost data: %+v", got)
	}
	if err := ks.Save(ctx, &Credentials{}); err != nil {
		t.Fatal(err)
	}
	if c, err := ks.Load(ctx); err != nil || c != nil {
		t.Fatalf("Load after clearing = %v, %v; want nil, nil", c, err)
	}
	if err := st.SetSecret(ctx, "ep-1", store.SecretOAuth, "not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Load(ctx); err == nil || strings.Contains(err.Error(), "not json") {
		t.Fatalf("Load of garbage = %v; want an error that does not quote the item", err)
	}
}
