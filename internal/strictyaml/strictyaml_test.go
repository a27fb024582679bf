package strictyaml

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestPrescan rejects deep nesting and huge files before the YAML parser,
// whose time grows with the square of the depth, and passes what is only
// quoted, commented or block text.
func TestPrescan(t *testing.T) {
	const valid = "version: 1\nname: p\nbroker: {kind: kafka}\nvariants: [{name: v, strategy: none}]\n"
	deepBlock := func(prefix string) string {
		var b strings.Builder
		for i := range 70 {
			b.WriteString(strings.Repeat(" ", i) + prefix + "\n")
		}
		return b.String()
	}
	const tooDeep = "nested too deeply: more than 64 lists and mappings inside each other"
	tests := []struct {
		name, in string
		want     string // "" for no prescan error
	}{
		{"brackets 200 KB", "a: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), "1:67: " + tooDeep},
		{"braces", "a: " + strings.Repeat("{b: ", 100) + strings.Repeat("}", 100), "1:256: " + tooDeep},
		{"brackets over lines", "a:\n" + strings.Repeat("[\n", 100), "65:1: " + tooDeep},
		{"after a quoted ]", "a: " + strings.Repeat(`["]", `, 100), "1:382: " + tooDeep},
		{"after a quoted #", "a: " + strings.Repeat(`["x #", `, 100), "1:508: " + tooDeep},
		{"after a quote in a word", "a: [don't, " + strings.Repeat("[", 100), "1:74: " + tooDeep},
		{"after a JSON pair", `a: {"k":"x #", ` + strings.Repeat("[", 100), "1:78: " + tooDeep},
		{"block mappings", deepBlock("a:"), "65:65: " + tooDeep},
		{"compact lists", "a:\n" + strings.Repeat("- ", 100) + "x", "2:129: " + tooDeep},
		{"too large", valid + "description: " + strings.Repeat("x", MaxFileSize), "1:1: file is larger than 256 KiB; a scenario file may be at most 256 KiB"},
		{"quoted brackets", valid + `description: "` + strings.Repeat("[", 100) + `"` + "\n", ""},
		{"single-quoted", valid + `description: 'it''s ` + strings.Repeat("{", 100) + `'` + "\n", ""},
		{"comment", valid + "# " + strings.Repeat("[", 100) + "\n", ""},
		{"block scalar", valid + "description: |\n  " + strings.Repeat("[", 100) + "\n", ""},
		{"plain text", valid + "description: a [b] {c} d\n", ""},
	}
	for _, tc := range tests {
		err := prescan("p.yaml", []byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != "p.yaml:"+tc.want):
			t.Errorf("%s: error %v\nwant p.yaml:%s", tc.name, err, tc.want)
		}
		if tc.want == "" {
			if _, _, err := Read("p.yaml", []byte(tc.in), ""); err != nil {
				t.Errorf("%s: Read: %v", tc.name, err)
			}
		}
	}
	// Through Read, too.
	if _, _, err := Read("p.yaml", []byte("a: "+strings.Repeat("[", 100_000)), ""); err == nil || !strings.Contains(err.Error(), tooDeep) {
		t.Errorf("Read(deep) = %v", err)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"name", "strategy", "producer", "consumer", "expect"}
	for in, want := range map[string]string{
		"stratgies": "strategy", "Strategy": "strategy", "nmae": "name", "consumers": "consumer",
		"expects": "expect", "x": "", "timeout": "", "prod": "",
	} {
		got, _ := Suggest(in, names)
		if got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFieldsInline: the fields of an embedded struct tagged
// `yaml:",inline"` are listed in its place, with the index path to them;
// "-" and params fields are left out.
func TestFieldsInline(t *testing.T) {
	type Inner struct {
		B int `yaml:"b"`
		C int `yaml:"c"`
	}
	type outer struct {
		A     int `yaml:"a"`
		Inner `yaml:",inline"`
		D     int `yaml:"-"`
		E     int `yaml:"e"`
		P     any `yaml:",params"`
	}
	var got []string
	for _, f := range Fields(reflect.TypeFor[outer]()) {
		got = append(got, fmt.Sprint(f.Name, f.Index))
	}
	if want := "a[0] b[1 0] c[1 1] e[3]"; strings.Join(got, " ") != want {
		t.Errorf("fields %v, want %s", got, want)
	}
}
