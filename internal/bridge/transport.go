package bridge

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"time"
)

// TransportOptions shapes the HTTP client the bridge talks through.
type TransportOptions struct {
	// CAFile is a PEM bundle trusted in addition to the system roots
	// (corporate TLS-inspecting proxies). There is deliberately no option to
	// turn verification off.
	CAFile string
	// DialTimeout bounds connection set-up (DNS, TCP, TLS). Default 10 s.
	DialTimeout time.Duration
	// KeepAlive is the TCP keep-alive idle time; a dead peer (a laptop that
	// slept, a NAT that forgot us) is noticed after about KeepAlive + 3 probes
	// 5 s apart. Default 15 s.
	KeepAlive time.Duration
}

// NewHTTPClient returns the client used for every request to the server.
//
// It has no total timeout: a tools/call may legitimately stream progress for
// many minutes, and http.Client.Timeout would cut it. Dead connections are
// found by TCP keep-alive and HTTP/2 pings instead. HTTPS_PROXY and NO_PROXY
// are honoured; cookies (load-balancer stickiness) are kept for the process's
// life; credentials are never forwarded across origins on redirect.
func NewHTTPClient(o TransportOptions) (*http.Client, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", o.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	dialer := &net.Dialer{
		Timeout: o.DialTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable:   true,
			Idle:     o.KeepAlive,
			Interval: 5 * time.Second,
			Count:    3,
		},
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   o.DialTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: o.KeepAlive,
			PingTimeout:     10 * time.Second,
		},
	}
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Transport:     tr,
		Jar:           jar,
		CheckRedirect: checkRedirect,
	}, nil
}

// redirectSafeHeaders may follow a redirect to another origin; everything
// else (Authorization, API keys, custom secret headers) is dropped.
var redirectSafeHeaders = map[string]bool{
	"Accept":               true,
	"Content-Type":         true,
	"Content-Length":       true,
	"User-Agent":           true,
	"Mcp-Protocol-Version": true,
	"Last-Event-Id":        true,
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL) != origin(via[0].URL) {
		for name := range req.Header {
			if !redirectSafeHeaders[http.CanonicalHeaderKey(name)] {
				req.Header.Del(name)
			}
		}
	}
	return nil
}

func origin(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port)
}

// ValidateURL checks an endpoint URL: http or https, a host, and plain http
// only for loopback hosts unless allowHTTP is set.
func ValidateURL(raw string, allowHTTP bool) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("no server URL given")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %v", raw, err)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP && !IsLoopback(u.Hostname()) {
			return nil, fmt.Errorf("refusing plain http to %s: credentials and tool data would cross the network unencrypted (use https, or --allow-http if you really mean it)", u.Hostname())
		}
	default:
		return nil, fmt.Errorf("invalid URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("invalid URL %q: no host", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("invalid URL: credentials in the URL would end up in logs; use --header or a stored secret")
	}
	return u, nil
}

// IsLoopback reports whether host names this machine.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RedactURL shows a URL without its query, fragment and user info, which may
// carry tokens: this form is safe for logs and error messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment = ""
	return u.String()
}
