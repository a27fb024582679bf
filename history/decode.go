package history

import (
	"encoding/json"
	"strconv"
	"time"
)

// decodeEvent reads one history line into e. Lines written by this package
// take a fast path that reads the known keys directly (a 1M-intent run has
// about 5M lines); anything else (escapes in strings, unknown keys, other
// spacing) goes through encoding/json, which also gives the errors. Both
// paths give the same Event (a fuzz test holds them to it).
func decodeEvent(line []byte, e *Event, intern map[string]string) error {
	if fastDecode(line, e, intern) {
		return nil
	}
	*e = Event{}
	if err := json.Unmarshal(line, e); err != nil {
		return err
	}
	if len(e.Intents) == 0 {
		e.Intents = nil // "intents":[] is no intents, as the writer omits it
	}
	return nil
}

// fastDecode reports false, leaving e in any state, when line is not in
// the plain form appendEvent writes.
func fastDecode(line []byte, e *Event, intern map[string]string) bool {
	*e = Event{}
	p := 0
	n := len(line)
	if n < 2 || line[0] != '{' || line[n-1] != '}' {
		return false
	}
	p = 1
	if p < n && line[p] == '}' {
		return true
	}
	for {
		// "key":
		if p >= n || line[p] != '"' {
			return false
		}
		end := p + 1
		for end < n && line[end] != '"' {
			if line[end] == '\\' {
				return false
			}
			end++
		}
		if end+1 >= n || line[end+1] != ':' {
			return false
		}
		key := line[p+1 : end]
		p = end + 2
		var ok bool
		switch string(key) {
		case "t":
			var v int64
			v, p, ok = readInt(line, p)
			e.T = time.Duration(v)
		case "variant":
			e.Variant, p, ok = readString(line, p, intern)
		case "type":
			var s string
			s, p, ok = readString(line, p, intern)
			e.Type = Type(s)
		case "intent":
			e.Intent, p, ok = readIntInt(line, p)
		case "attempt":
			e.Attempt, p, ok = readIntInt(line, p)
		case "consumer":
			e.Consumer, p, ok = readIntInt(line, p)
		case "txn":
			e.Txn, p, ok = readIntInt(line, p)
		case "backlog":
			e.Backlog, p, ok = readInt(line, p)
		case "pos":
			e.Position, p, ok = readString(line, p, nil)
		case "fault":
			e.Fault, p, ok = readString(line, p, intern)
		case "point":
			e.Point, p, ok = readString(line, p, intern)
		case "reason":
			e.Reason, p, ok = readString(line, p, intern)
		case "qos":
			e.QoS, p, ok = readString(line, p, intern)
		case "redelivered":
			e.Redelivered, p, ok = readBool(line, p)
		case "applied":
			e.Applied, p, ok = readBool(line, p)
		case "rejected":
			e.Rejected, p, ok = readBool(line, p)
		case "drained":
			e.Drained, p, ok = readBool(line, p)
		case "intents":
			e.Intents, p, ok = readInts(line, p)
		case "pid":
			e.PID, p, ok = readIntInt(line, p)
		case "held":
			e.Held, p, ok = readBool(line, p)
		case "retained":
			e.Retained, p, ok = readBool(line, p)
		case "refused":
			e.Refused, p, ok = readBool(line, p)
		case "starved":
			e.Starved, p, ok = readBool(line, p)
		case "deaths":
			e.Deaths, p, ok = readIntInt(line, p)
		case "lease_lost":
			e.LeaseLost, p, ok = readBool(line, p)
		case "fire_and_forget":
			e.FireAndForget, p, ok = readBool(line, p)
		case "packet":
			e.Packet, p, ok = readString(line, p, intern)
		case "leg":
			e.Leg, p, ok = readString(line, p, intern)
		default:
			return false
		}
		if !ok || p >= n {
			return false
		}
		switch line[p] {
		case ',':
			p++
		case '}':
			return p == n-1
		default:
			return false
		}
	}
}

// readInt reads a JSON integer: no leading zeros, no fraction or exponent.
func readInt(b []byte, p int) (int64, int, bool) {
	start := p
	if p < len(b) && b[p] == '-' {
		p++
	}
	digits := p
	for p < len(b) && b[p] >= '0' && b[p] <= '9' {
		p++
	}
	if p-digits > 1 && b[digits] == '0' {
		return 0, p, false
	}
	v, err := strconv.ParseInt(string(b[start:p]), 10, 64)
	return v, p, err == nil
}

func readIntInt(b []byte, p int) (int, int, bool) {
	v, p, ok := readInt(b, p)
	return int(v), p, ok && int64(int(v)) == v
}

func readBool(b []byte, p int) (bool, int, bool) {
	switch {
	case len(b)-p >= 4 && string(b[p:p+4]) == "true":
		return true, p + 4, true
	case len(b)-p >= 5 && string(b[p:p+5]) == "false":
		return false, p + 5, true
	}
	return false, p, false
}

// readString reads a string without escapes; intern, if not nil, shares
// the few distinct values (variant names, event types) between events.
func readString(b []byte, p int, intern map[string]string) (string, int, bool) {
	if p >= len(b) || b[p] != '"' {
		return "", p, false
	}
	end := p + 1
	for end < len(b) && b[end] != '"' {
		if c := b[end]; c == '\\' || c < 0x20 || c >= 0x80 {
			return "", p, false // escapes and non-ASCII: encoding/json decides
		}
		end++
	}
	if end >= len(b) {
		return "", p, false
	}
	raw := b[p+1 : end]
	if intern != nil {
		if s, ok := intern[string(raw)]; ok {
			return s, end + 1, true
		}
		if len(intern) < 1024 {
			s := string(raw)
			intern[s] = s
			return s, end + 1, true
		}
	}
	return string(raw), end + 1, true
}

func readInts(b []byte, p int) ([]int, int, bool) {
	if p >= len(b) || b[p] != '[' {
		return nil, p, false
	}
	p++
	var out []int
	if p < len(b) && b[p] == ']' {
		return nil, p, false // encoding/json gives an empty, non-nil slice
	}
	for {
		var v int
		var ok bool
		v, p, ok = readIntInt(b, p)
		if !ok || p >= len(b) {
			return nil, p, false
		}
		out = append(out, v)
		switch b[p] {
		case ',':
			p++
		case ']':
			return out, p + 1, true
		default:
			return nil, p, false
		}
	}
}
