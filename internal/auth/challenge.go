package auth

import (
	"net/http"
	"strings"
)

// challenge is what a 401 or 403 says about the Bearer scheme (RFC 6750
// section 3, RFC 9728 section 5.1).
type challenge struct {
	resourceMetadata string
	scope            string
	err              string
}

// parseChallenge reads the Bearer challenge among the WWW-Authenticate
// headers of h. Other schemes are skipped.
func parseChallenge(h http.Header) challenge {
	var c challenge
	for _, v := range h.Values("WWW-Authenticate") {
		for _, ch := range parseWWWAuthenticate(v) {
			if !strings.EqualFold(ch.scheme, "Bearer") {
				continue
			}
			c.resourceMetadata = ch.params["resource_metadata"]
			c.scope = ch.params["scope"]
			c.err = ch.params["error"]
			return c
		}
	}
	return c
}

type authChallenge struct {
	scheme string
	params map[string]string
}

// parseWWWAuthenticate splits one WWW-Authenticate value into challenges
// (RFC 9110 section 11.6.1): `scheme [token68 | name=value *("," name=value)]`,
// challenges separated by commas. Values may be tokens or quoted strings.
// It is lenient: a malformed tail is dropped, never an error.
func parseWWWAuthenticate(s string) []authChallenge {
	var out []authChallenge
	var cur *authChallenge
	p := &lexer{s: s}
	for {
		p.skip(" \t,")
		if p.done() {
			break
		}
		tok := p.token()
		if tok == "" {
			break // garbage: stop
		}
		p.skip(" \t")
		if p.peek() == '=' && cur != nil {
			// name=value of the current challenge (or token68 padding).
			p.i++
			p.skip(" \t")
			var v string
			if p.peek() == '"' {
				v = p.quoted()
			} else {
				v = p.token()
			}
			cur.params[strings.ToLower(tok)] = v
			continue
		}
		// A new scheme.
		out = append(out, authChallenge{scheme: tok, params: map[string]string{}})
		cur = &out[len(out)-1]
		// A token68 after the scheme (no '=' name) is skipped.
		save := p.i
		t := p.token()
		p.skip(" \t")
		if t != "" && p.peek() != '=' {
			for p.peek() == '=' {
				p.i++
			}
			continue
		}
		if t != "" && p.peek() == '=' && p.i+1 < len(p.s) && (p.s[p.i+1] == '=' || p.s[p.i+1] == ',') {
			// token68 ending in '=' padding.
			for p.peek() == '=' {
				p.i++
			}
			continue
		}
		p.i = save
	}
	return out
}

type lexer struct {
	s string
	i int
}

func (l *lexer) done() bool { return l.i >= len(l.s) }

func (l *lexer) peek() byte {
	if l.done() {
		return 0
	}
	return l.s[l.i]
}

func (l *lexer) skip(set string) {
	for !l.done() && strings.IndexByte(set, l.s[l.i]) >= 0 {
		l.i++
	}
}

// token reads tchar and the token68 characters '/', '+', '.', '~'.
func (l *lexer) token() string {
	start := l.i
	for !l.done() {
		c := l.s[l.i]
		if c == ' ' || c == '\t' || c == ',' || c == '=' || c == '"' {
			break
		}
		l.i++
	}
	return l.s[start:l.i]
}

func (l *lexer) quoted() string {
	l.i++ // opening quote
	var b strings.Builder
	for !l.done() {
		c := l.s[l.i]
		l.i++
		switch c {
		case '\\':
			if !l.done() {
				b.WriteByte(l.s[l.i])
				l.i++
			}
		case '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
