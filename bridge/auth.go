package bridge

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// authenticator checks bearer tokens and browser origins before the upgrade.
type authenticator struct {
	tokens   []Token
	digests  [][sha256.Size]byte
	insecure bool
	origins  []string
}

func newAuthenticator(cfg Config) (*authenticator, error) {
	a := &authenticator{insecure: cfg.Insecure}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range cfg.Tokens {
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("token %d: %w", i+1, err)
		}
		d := sha256.Sum256([]byte(t.Secret))
		if seen[d] {
			return nil, fmt.Errorf("%w: token %d is given twice", ErrBadToken, i+1)
		}
		seen[d] = true
		a.tokens = append(a.tokens, t)
		a.digests = append(a.digests, d)
	}
	if len(a.tokens) == 0 && !a.insecure {
		return nil, ErrNoToken
	}
	if a.insecure {
		for _, t := range a.tokens {
			if t.Restricted() {
				return nil, ErrInsecureRestricted
			}
		}
	}
	for _, o := range cfg.AllowOrigins {
		a.origins = append(a.origins, strings.TrimSuffix(strings.TrimSpace(o), "/"))
	}
	return a, nil
}

// authenticate returns the token of r's "Authorization: Bearer" header. The given token's digest
// is compared in constant time with every configured digest, without an early exit, so the
// time taken says nothing about which token (or how much of one) matched. In insecure mode a
// request without an Authorization header is let in unrestricted; a request that sends one must
// send a valid token, as without insecure mode (a wrong token is a mistake worth reporting, not
// an anonymous client).
func (a *authenticator) authenticate(r *http.Request) (Token, bool) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return Token{}, a.insecure
	}
	given, ok := bearer(values[0])
	if !ok {
		return Token{}, false
	}
	digest := sha256.Sum256([]byte(given))
	found, index := 0, 0
	for i, d := range a.digests {
		eq := subtle.ConstantTimeCompare(digest[:], d[:])
		index = subtle.ConstantTimeSelect(eq, i, index)
		found |= eq
	}
	if found == 1 {
		return a.tokens[index], true
	}
	return Token{}, false
}

// bearer extracts the token of an "Authorization: Bearer <token>" header value.
func bearer(header string) (string, bool) {
	const scheme = "bearer "
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	token := strings.TrimSpace(header[len(scheme):])
	return token, token != ""
}

// originAllowed lets in requests without an Origin header (non-browser clients) and browsers
// whose origin is listed.
func (a *authenticator) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, o := range a.origins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
