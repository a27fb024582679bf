package history

import (
	"strconv"
	"unicode/utf8"
)

// appendEvent appends e as one JSON line, exactly as encoding/json with
// HTML escaping off would write it (a test holds it to that), without
// reflection: recording is on every message's path.
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, int64(e.T), 10)
	b = append(b, `,"variant":`...)
	b = appendString(b, e.Variant)
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	if e.Intent != 0 {
		b = append(b, `,"intent":`...)
		b = strconv.AppendInt(b, int64(e.Intent), 10)
	}
	if len(e.Intents) > 0 {
		b = append(b, `,"intents":[`...)
		for i, in := range e.Intents {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(in), 10)
		}
		b = append(b, ']')
	}
	b = appendInt(b, `,"attempt":`, int64(e.Attempt))
	b = appendInt(b, `,"consumer":`, int64(e.Consumer))
	b = appendStr(b, `,"pos":`, e.Position)
	b = appendBool(b, `,"redelivered":true`, e.Redelivered)
	b = appendBool(b, `,"applied":true`, e.Applied)
	b = appendBool(b, `,"rejected":true`, e.Rejected)
	b = appendStr(b, `,"fault":`, e.Fault)
	b = appendStr(b, `,"point":`, e.Point)
	b = appendBool(b, `,"drained":true`, e.Drained)
	b = appendInt(b, `,"backlog":`, e.Backlog)
	b = appendStr(b, `,"reason":`, e.Reason)
	b = appendInt(b, `,"txn":`, int64(e.Txn))
	b = appendInt(b, `,"pid":`, int64(e.PID))
	b = appendStr(b, `,"qos":`, e.QoS)
	b = appendBool(b, `,"retained":true`, e.Retained)
	b = appendBool(b, `,"held":true`, e.Held)
	b = appendBool(b, `,"refused":true`, e.Refused)
	b = appendBool(b, `,"starved":true`, e.Starved)
	b = appendInt(b, `,"deaths":`, int64(e.Deaths))
	b = appendBool(b, `,"lease_lost":true`, e.LeaseLost)
	b = appendBool(b, `,"fire_and_forget":true`, e.FireAndForget)
	b = appendStr(b, `,"packet":`, e.Packet)
	b = appendStr(b, `,"leg":`, e.Leg)
	return append(b, '}', '\n')
}

func appendInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

func appendStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

func appendBool(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}

const hex = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does with
// SetEscapeHTML(false): invalid UTF-8 becomes U+FFFD, U+2028 and U+2029 are
// escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
