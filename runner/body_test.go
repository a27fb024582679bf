package runner

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The fast writer writes what json.Marshal writes, for every id source's
// ids and for ids it must leave to encoding/json.
func TestBodyMarshalIsJSONMarshal(t *testing.T) {
	for _, b := range []body{
		{Intent: 1, Account: 1, Amount: 42, Version: 0, ID: "1"},
		{Intent: 1 << 40, Account: 7, Amount: -3, Version: -1, ID: "6f1c2a4e-0b7d-4c8e-9a1f-2d3e4f5a6b7c"},
		{ID: ""},
		{Intent: 5, ID: `a"b\c<d>&é` + "\x01"},
	} {
		want, _ := json.Marshal(b)
		if got := b.marshal(); !bytes.Equal(got, want) {
			t.Errorf("marshal(%+v) = %s, want %s", b, got, want)
		}
		got, err := unmarshalBody(want)
		if err != nil || got != b {
			t.Errorf("unmarshalBody(%s) = %+v, %v; want %+v", want, got, err, b)
		}
	}
}

// FuzzUnmarshalBody: the fast reader accepts exactly what encoding/json
// accepts, with the same result.
func FuzzUnmarshalBody(f *testing.F) {
	for _, s := range []string{
		`{"intent":1,"account":1,"amount":42,"version":0,"id":"1"}`,
		`{"intent":+1,"account":1,"amount":42,"version":0,"id":"1"}`,
		`{"intent":01,"account":1,"amount":42,"version":0,"id":"1"}`,
		`{"intent":1,"account":1,"amount":4.2,"version":0,"id":"1"}`,
		`{"intent":1,"account":1,"amount":42,"version":0,"id":"1\u0041"}`,
		`{"intent":99999999999999999999,"account":1,"amount":42,"version":0,"id":"1"}`,
		`{"account":1,"intent":1,"amount":42,"version":0,"id":"1"}`,
		`{"intent":-,"account":1,"amount":42,"version":0,"id":"1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		var want body
		werr := json.Unmarshal(buf, &want)
		got, ok := readBody(buf)
		if !ok {
			return // encoding/json decides
		}
		if werr != nil || got != want {
			t.Fatalf("readBody(%q) = %+v; encoding/json: %+v, %v", buf, got, want, werr)
		}
	})
}
