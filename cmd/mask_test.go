package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsNeverPrinted: a password given in --store, --redis,
// --addresses, --toxiproxy or in the scenario file appears in no output of
// any format, in no saved file and in no error message, for valid and
// malformed URLs alike.
func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "S3CRETpw"
	dir := t.TempDir()
	rabbit := filepath.Join(dir, "rabbit.yaml")
	inFile := filepath.Join(dir, "in-file.yaml")
	badInFile := filepath.Join(dir, "bad-in-file.yaml")
	for path, text := range map[string]string{
		rabbit: `version: 1
name: rabbit
broker: {kind: rabbitmq, mode: external, addresses: ["amqp://guest:guest@127.0.0.1:5672/"]}
variants:
  - {name: none, strategy: none}
`,
		inFile: `version: 1
name: in-file
broker: {kind: rabbitmq, mode: external, addresses: ["amqp://u:` + secret + `@127.0.0.1:5672/"]}
store: postgres://u:` + secret + `@127.0.0.1:5432/test
redis: redis://:` + secret + `@127.0.0.1:6379/0
variants:
  - {name: none, strategy: none}
`,
		badInFile: `version: 1
name: bad-in-file
broker: {kind: rabbitmq, mode: external, addresses: ["amqp://u:` + secret + `@127.0.0.1:99999/"]}
store: postgres://u:` + secret + `@127.0.0.1:notaport/test
variants:
  - {name: none, strategy: none}
`,
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flags := [][]string{
		{"--store", "postgres://u:" + secret + "@127.0.0.1:5432/test"},
		{"--store", "postgres://u:" + secret + "@127.0.0.1:notaport/test"},
		{"--redis", "redis://:" + secret + "@127.0.0.1:6379/0"},
		{"--redis", "redis://:" + secret + "@127.0.0.1:99999/0"},
		{"--addresses", "amqp://u:" + secret + "@127.0.0.1:5672/"},
		{"--addresses", "amqp://u:" + secret + "@:5672/"},
		{"--toxiproxy", "http://u:" + secret + "@127.0.0.1:8474"},
		{"--toxiproxy", "ftp://u:" + secret + "@127.0.0.1:8474"},
	}
	var cases [][]string
	for _, f := range flags {
		cases = append(cases, append([]string{"run", rabbit}, f...))
	}
	cases = append(cases, []string{"run", inFile}, []string{"run", badInFile}, []string{"validate", badInFile})
	for _, args := range cases {
		for _, format := range []string{"text", "json", "markdown", "junit", "html"} {
			args := append(append([]string(nil), args...), "-o", format)
			if args[0] == "validate" {
				args = args[:2]
			}
			html := filepath.Join(t.TempDir(), "report.html")
			out := filepath.Join(t.TempDir(), "runs")
			if args[0] == "run" {
				args = append(args, "--html", html, "--out", out)
			}
			r := run(t, nil, args...)
			texts := map[string]string{"stdout": r.out, "stderr": r.err}
			for _, root := range []string{html, out} {
				filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						b, _ := os.ReadFile(path)
						texts[path] = string(b)
					}
					return nil
				})
			}
			for where, text := range texts {
				if strings.Contains(text, secret) {
					t.Errorf("%v (exit %d): the password is in %s:\n%s", args, r.code, where, text)
				}
			}
		}
	}
}
