package catalog

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// A URL's password is masked before the URL is parsed or printed: its
// userinfo is everything between "scheme://" and the last @, whatever it
// holds. url.Parse would split a password holding a /, # or ? elsewhere
// (its host, its path) and then quote the URL, or a piece of the password
// as a "port", in its error.

// scheme matches the start of a URL: "scheme://".
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// splitUserinfo splits a URL into "scheme://", its userinfo (up to the
// last @) and the rest; ok is false when it has no scheme or no @.
func splitUserinfo(a string) (head, userinfo, rest string, ok bool) {
	loc := scheme.FindStringIndex(a)
	if loc == nil {
		return "", "", a, false
	}
	head, tail := a[:loc[1]], a[loc[1]:]
	at := strings.LastIndexByte(tail, '@')
	if at < 0 {
		return head, "", tail, false
	}
	return head, tail[:at], tail[at+1:], true
}

// tokenSchemes name the URL kinds whose userinfo without a colon is a
// secret of its own: NATS reads nats://TOKEN@HOST as an auth token.
var tokenSchemes = []string{"nats://", "tls://"}

// maskUserinfo is userinfo with its secret hidden: USER:*** (the user
// kept), *** for a token, or as it is when it holds no secret.
func maskUserinfo(head, userinfo string) string {
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return user + ":***"
	}
	for _, t := range tokenSchemes {
		if strings.EqualFold(head, t) {
			return "***"
		}
	}
	return userinfo
}

// MaskURL hides the password of a URL (amqp://guest:***@host:5672/) and a
// NATS token (nats://***@host:4222), for every message and report that
// shows an address: the userinfo up to the last @, whatever characters
// the password holds and whether or not the rest parses. In a PostgreSQL
// key=value DSN it hides password=. A string without a secret comes back
// as it is.
func MaskURL(a string) string {
	head, userinfo, rest, ok := splitUserinfo(a)
	if !ok {
		if strings.Contains(a, "://") {
			return maskQuery(a)
		}
		return maskDSN(a)
	}
	return head + maskUserinfo(head, userinfo) + "@" + maskQuery(rest)
}

// queryPassword matches a password in a URL's query (PostgreSQL's
// password and sslpassword parameters), up to the next parameter.
var queryPassword = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)([^&#\s]*)`)

// maskQuery hides the passwords in a URL's query.
func maskQuery(s string) string {
	if !strings.Contains(strings.ToLower(s), "password=") {
		return s
	}
	return queryPassword.ReplaceAllString(s, "${1}***")
}

// dsnPassword matches the password of a PostgreSQL key=value DSN (and
// sslpassword): quoted ('a b', with \' inside) or up to the next space.
// One masked already (password=***) is left as it is.
var dsnPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)(\*\*\*|'(?:[^'\\]|\\.)*'?|[^\s'"]+)`)

func maskDSN(s string) string {
	if !strings.Contains(strings.ToLower(s), "password") {
		return s
	}
	return dsnPassword.ReplaceAllString(s, "${1}***")
}

// MaskURLs hides the password of every URL, and every DSN password, in a
// text: a message, a report, a scenario saved with a run. A URL in quotes
// (as Go's errors quote one) ends at the closing quote, so its password
// may hold anything but that quote; a URL not in quotes ends at a space,
// a quote or one of ,[]{}<> (how YAML and reports delimit one), and its
// password may hold /, #, %, ? and @.
func MaskURLs(text string) string {
	if !strings.Contains(text, "://") {
		return maskDSN(text)
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], "://")
		if j < 0 {
			b.WriteString(text[i:])
			break
		}
		start := i + j // back to the scheme's first letter
		for start > i && isSchemeByte(text[start-1]) {
			start--
		}
		if start == i+j || !isLetter(text[start]) {
			b.WriteString(text[i : i+j+3])
			i += j + 3
			continue
		}
		b.WriteString(text[i:start])
		end := urlEnd(text, start)
		b.WriteString(MaskURL(text[start:end]))
		i = end
	}
	return maskDSN(b.String())
}

// urlEnd is where the URL that starts at start in text ends: at the quote
// that closes the one before it (one escaped with \ does not), else at a
// space, a quote or one of ,[]{}<>; never past the end of its line.
func urlEnd(text string, start int) int {
	var quote byte
	if start > 0 && strings.IndexByte("\"'`", text[start-1]) >= 0 {
		quote = text[start-1]
	}
	for k := start; k < len(text); k++ {
		c := text[k]
		switch {
		case c == '\n' || c == '\r':
			return k
		case quote != 0 && c == '\\' && quote == '"':
			k++ // an escaped character, the quote among them
		case quote != 0:
			if c == quote {
				return k
			}
		case c == ' ' || c == '\t' || strings.IndexByte("\"'`,[]{}<>", c) >= 0:
			return k
		}
	}
	return len(text)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isSchemeByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}

// errUserinfo says what to do with a user or password a URL cannot carry
// as it is, without saying which character (the message must not tell the
// password either).
var errUserinfo = errors.New("the user or password holds a character a URL must percent-encode " +
	"(a space, /, ?, #, @, [, ], a quote, a non-ASCII letter, or a % not followed by two hex digits): " +
	"write it as %XX, e.g. / as %2F, a space as %20, # as %23, @ as %40, % as %25")

// ParseURL parses a URL whose password must not be shown: its userinfo
// (up to the last @) is checked on its own, then the URL is parsed with
// the password masked, so that neither the error nor what parsed holds
// the secret. The URL returned has the masked userinfo; its scheme, host,
// port and path are the real ones.
func ParseURL(a string) (*url.URL, error) {
	if _, userinfo, _, ok := splitUserinfo(a); ok && !validUserinfo(userinfo) {
		return nil, errUserinfo
	}
	u, err := url.Parse(MaskURL(a))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which the caller names (masked)
		}
		return nil, fmt.Errorf("does not parse: %w", err)
	}
	return u, nil
}

// validUserinfo reports whether s may be a URL's userinfo as it is: RFC
// 3986's characters, with every % starting an escape. An @ is not one:
// url.Parse would take it, pgx reads the host from the first @.
func validUserinfo(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c), c >= '0' && c <= '9', strings.IndexByte("-._:~!$&'()*+,;=", c) >= 0:
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
