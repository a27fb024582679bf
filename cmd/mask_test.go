package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// secretParts are the two halves of every password below: neither may
// appear anywhere, so that a piece of a password split off by a parser
// (a "port", a "path") is caught too.
var secretParts = []string{"PW1x", "PW2y"}

// passwords: malformed ones (characters a URL must percent-encode, which
// validation refuses, exit 2) and a valid one (percent-encoded), which
// reaches the run.
var passwords = []struct {
	pw        string
	malformed bool
}{
	{"PW1x/PW2y", true},
	{"PW1x PW2y", true},
	{"PW1x#PW2y", true},
	{"PW1x%PW2y", true},
	{"PW1x@PW2y", true},
	{"PW1x%2FPW2y%20%23%25%40", false},
}

// urlKind is one kind of URL dqbench takes: a scenario that uses it, and
// the ways it can be given.
type urlKind struct {
	name string
	// url is the URL with the password pw.
	url func(pw string) string
	// scenario is a scenario file using the URL in field (a YAML string).
	scenario func(field string) string
	// base is the scenario the flag and the variable apply to.
	base string
	flag string // the run flag that gives it ("" for none)
	env  string // its environment variable
}

var urlKinds = []urlKind{
	{
		name:     "amqp",
		url:      func(pw string) string { return "amqp://u:" + pw + "@127.0.0.1:5672/" },
		scenario: func(f string) string { return rabbitScenario("addresses: [" + f + "]") },
		base:     rabbitScenario(""), flag: "--addresses", env: "DQBENCH_ADDRESSES",
	},
	{
		name:     "mqtt",
		url:      func(pw string) string { return "tcp://u:" + pw + "@127.0.0.1:1883" },
		scenario: func(f string) string { return kindScenario("mqtt", "mode: external, addresses: ["+f+"]") },
		base:     kindScenario("mqtt", ""), flag: "--addresses", env: "DQBENCH_ADDRESSES",
	},
	{
		name:     "nats",
		url:      func(pw string) string { return "nats://u:" + pw + "@127.0.0.1:4222" },
		scenario: func(f string) string { return kindScenario("nats", "mode: external, addresses: ["+f+"]") },
		base:     kindScenario("nats", ""), flag: "--addresses", env: "DQBENCH_ADDRESSES",
	},
	{
		name:     "nats-token",
		url:      func(pw string) string { return "nats://" + pw + "@127.0.0.1:4222" },
		scenario: func(f string) string { return kindScenario("nats", "mode: external, addresses: ["+f+"]") },
		base:     kindScenario("nats", ""), flag: "--addresses", env: "DQBENCH_ADDRESSES",
	},
	{
		name:     "redis",
		url:      func(pw string) string { return "redis://:" + pw + "@127.0.0.1:6379/0" },
		scenario: func(f string) string { return kindScenario("kafka", "") + "redis: " + f + "\n" },
		base:     kindScenario("kafka", ""), flag: "--redis", env: "DQBENCH_REDIS",
	},
	{
		name:     "postgres",
		url:      func(pw string) string { return "postgres://u:" + pw + "@127.0.0.1:5432/test" },
		scenario: func(f string) string { return kindScenario("kafka", "") + "store: " + f + "\n" },
		base:     kindScenario("kafka", ""), flag: "--store", env: "DQBENCH_STORE",
	},
	{
		name:     "postgres-variant",
		url:      func(pw string) string { return "postgresql://u:" + pw + "@127.0.0.1:5432/test" },
		scenario: func(f string) string { return kindScenario("kafka", "", "store: "+f) },
	},
	{
		name:     "postgres-dsn",
		url:      func(pw string) string { return "host=127.0.0.1 user=u password=" + pw + " dbname=test" },
		scenario: func(f string) string { return kindScenario("kafka", "") + "store: " + f + "\n" },
		base:     kindScenario("kafka", ""), flag: "--store", env: "DQBENCH_STORE",
	},
	{
		name:     "toxiproxy",
		url:      func(pw string) string { return "http://u:" + pw + "@127.0.0.1:8474" },
		scenario: func(f string) string { return rabbitScenario("toxiproxy: " + f) },
		base:     rabbitScenario(""), flag: "--toxiproxy", env: "DQBENCH_TOXIPROXY",
	},
}

func rabbitScenario(extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return "version: 1\nname: rabbit\nbroker: {kind: rabbitmq, mode: external" + extra + "}\nvariants:\n  - {name: none, strategy: none}\n"
}

func kindScenario(kind, extra string, variantExtra ...string) string {
	if extra != "" {
		extra = ", " + extra
	}
	v := ""
	if len(variantExtra) > 0 {
		v = ", " + variantExtra[0]
	}
	return "version: 1\nname: " + kind + "\nbroker: {kind: " + kind + extra + "}\nvariants:\n  - {name: none, strategy: none" + v + "}\n"
}

// TestSecretsNeverPrinted: a password with /, a space, #, % or @, in every
// kind of URL dqbench takes (AMQP, MQTT, NATS and its token, Redis,
// PostgreSQL and its key=value DSN, toxiproxy), given in a flag, in a
// DQBENCH_ variable or in the scenario file, and every secret of broker
// auth (a password or token in a file or a variable), appears in no output of any
// format, in no saved file and in no error message, malformed or valid;
// a malformed one is exit 2 saying how to write it.
func TestSecretsNeverPrinted(t *testing.T) {
	type tc struct {
		name      string
		args      []string
		env       map[string]string
		malformed bool
	}
	var cases []tc
	for _, k := range urlKinds {
		for _, p := range passwords {
			u := k.url(p.pw)
			if strings.HasPrefix(k.name, "postgres-dsn") && strings.ContainsAny(p.pw, " ") {
				u = strings.Replace(u, "password="+p.pw, "password='"+p.pw+"'", 1) // a DSN quotes a value with a space
			}
			// A DSN is refused whatever its password; a URL as its password is.
			malformed := p.malformed || k.name == "postgres-dsn"
			file := filepath.Join(t.TempDir(), k.name+".yaml")
			if err := os.WriteFile(file, []byte(k.scenario(strconv.Quote(u))), 0o644); err != nil {
				t.Fatal(err)
			}
			cases = append(cases,
				tc{name: k.name + " file " + p.pw, args: []string{"run", file}, malformed: malformed},
				tc{name: k.name + " validate " + p.pw, args: []string{"validate", file}, malformed: malformed})
			if k.flag == "" {
				continue
			}
			base := filepath.Join(t.TempDir(), k.name+"-base.yaml")
			if err := os.WriteFile(base, []byte(k.base), 0o644); err != nil {
				t.Fatal(err)
			}
			cases = append(cases,
				tc{name: k.name + " flag " + p.pw, args: []string{"run", base, k.flag, u}, malformed: malformed},
				tc{name: k.name + " env " + p.pw, args: []string{"run", base}, env: map[string]string{k.env: u}, malformed: malformed})
		}
	}
	// The secrets of broker auth (catalog.Auth): a password or token in a
	// file or a variable the scenario names, or in DQBENCH_PASSWORD and
	// DQBENCH_TOKEN; the scenario holds only the file's or variable's name.
	for _, p := range passwords {
		file := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(file, []byte(p.pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		secretEnv := map[string]string{"MY_SECRET": p.pw, "DQBENCH_PASSWORD": p.pw, "DQBENCH_TOKEN": p.pw}
		passwordAuth := []string{
			"{user: u, password_file: " + strconv.Quote(file) + "}",
			"{user: u, password_env: MY_SECRET}",
		}
		for _, k := range []struct {
			kind, address string
			auth          []string
		}{
			{"nats", "tls://127.0.0.1:4222", append(passwordAuth, "{token_file: "+strconv.Quote(file)+"}", "{token_env: MY_SECRET}")},
			{"rabbitmq", "amqps://127.0.0.1:5671/", passwordAuth},
			{"mqtt", "ssl://127.0.0.1:8883", passwordAuth},
			{"kafka", "127.0.0.1:9093", passwordAuth},
		} {
			for _, a := range k.auth {
				sc := filepath.Join(t.TempDir(), "auth.yaml")
				if err := os.WriteFile(sc, []byte(kindScenario(k.kind, "mode: external, addresses: [\""+k.address+"\"], tls: {ca: ca.pem}, auth: "+a)), 0o644); err != nil {
					t.Fatal(err)
				}
				cases = append(cases,
					tc{name: k.kind + " auth " + a + " " + p.pw, args: []string{"run", sc}, env: secretEnv},
					tc{name: k.kind + " auth " + a + " validate " + p.pw, args: []string{"validate", sc}, env: secretEnv})
			}
		}
		base := filepath.Join(t.TempDir(), "nats-base.yaml")
		if err := os.WriteFile(base, []byte(kindScenario("nats", "mode: external")), 0o644); err != nil {
			t.Fatal(err)
		}
		cases = append(cases,
			tc{name: "DQBENCH_PASSWORD " + p.pw, args: []string{"run", base}, env: map[string]string{"DQBENCH_USER": "u", "DQBENCH_PASSWORD": p.pw, "DQBENCH_TLS_CA": "ca.pem"}},
			tc{name: "DQBENCH_TOKEN " + p.pw, args: []string{"run", base}, env: map[string]string{"DQBENCH_TOKEN": p.pw}},
			tc{name: "DQBENCH_PASSWORD_FILE " + p.pw, args: []string{"run", base}, env: map[string]string{"DQBENCH_USER": "u", "DQBENCH_PASSWORD_FILE": file}})
	}
	// A password in a store URL's query (PostgreSQL's password and
	// sslpassword, the key's passphrase), in the file, a flag or a variable.
	for _, pw := range []string{"PW1x%2FPW2y", "PW1x/PW2y"} {
		for _, param := range []string{"sslpassword", "password"} {
			u := "postgres://u@127.0.0.1:5432/test?sslmode=verify-full&" + param + "=" + pw + "&sslrootcert=ca.pem"
			file := filepath.Join(t.TempDir(), "store.yaml")
			if err := os.WriteFile(file, []byte(kindScenario("kafka", "")+"store: "+strconv.Quote(u)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			base := filepath.Join(t.TempDir(), "base.yaml")
			if err := os.WriteFile(base, []byte(kindScenario("kafka", "")), 0o644); err != nil {
				t.Fatal(err)
			}
			cases = append(cases,
				tc{name: "store " + param + " file " + pw, args: []string{"run", file}},
				tc{name: "store " + param + " validate " + pw, args: []string{"validate", file}},
				tc{name: "store " + param + " flag " + pw, args: []string{"run", base, "--store", u}},
				tc{name: "store " + param + " env " + pw, args: []string{"run", base}, env: map[string]string{"DQBENCH_STORE": u}})
		}
	}
	for _, c := range cases {
		for _, format := range []string{"table", "json", "markdown", "junit", "html"} {
			args := append([]string(nil), c.args...)
			files := t.TempDir()
			html := filepath.Join(files, "report.html")
			out := filepath.Join(t.TempDir(), "runs")
			if args[0] == "run" {
				args = append(args, "-o", format, "--html", html, "--out", out,
					"--json", filepath.Join(files, "r.json"), "--junit", filepath.Join(files, "r.xml"), "--markdown", filepath.Join(files, "r.md"))
			} else if format != "table" {
				continue
			}
			r := runEnv(t, c.env, args...)
			texts := map[string]string{"stdout": r.out, "stderr": r.err}
			for _, root := range []string{files, out} {
				filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						b, _ := os.ReadFile(path)
						texts[path] = string(b)
					}
					return nil
				})
			}
			for where, text := range texts {
				for _, part := range secretParts {
					if strings.Contains(text, part) {
						t.Errorf("%s, -o %s (exit %d): the password is in %s:\n%s", c.name, format, r.code, where, text)
					}
				}
			}
			if c.malformed && r.code != ExitUsage {
				t.Errorf("%s: exit %d, want %d\n%s", c.name, r.code, ExitUsage, r.err)
			}
			if !c.malformed && r.code == ExitUsage {
				t.Errorf("%s: a valid URL refused:\n%s", c.name, r.err)
			}
		}
	}
}

// runEnv is run with the environment variables env (and no others).
func runEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	fake := &fakeRunner{}
	var out, errOut bytes.Buffer
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	code := execute(t.Context(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut, LookupEnv: lookup}, fake.run)
	return result{code: code, out: out.String(), err: errOut.String(), fake: fake}
}
