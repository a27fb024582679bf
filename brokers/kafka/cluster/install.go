package cluster

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Version is the Apache Kafka release `dqbench brokers fetch kafka` copies
// from Maven Central (pom.xml's kafka.version; a test checks they agree).
const Version = "4.4.0"

// The environment variables that say where Kafka and Java are.
const (
	// HomeEnv names an unpacked Apache Kafka distribution: its libs/ is
	// the broker's classpath.
	HomeEnv = "KAFKA_HOME"
	// CacheEnv names the directory `dqbench brokers fetch kafka` fills
	// (libs/ inside it).
	CacheEnv = "DQBENCH_KAFKA_CACHE"
	// JavaHomeEnv names the Java runtime (bin/java); else java on PATH.
	JavaHomeEnv = "JAVA_HOME"
)

// pom is the Maven build file that lists the broker's jar and its runtime
// dependencies.
//
//go:embed pom.xml
var pom []byte

// ErrNotInstalled: no Kafka jars or no Java runtime on this machine.
var ErrNotInstalled = errors.New("Apache Kafka is not installed for dqbench")

// Install is what a managed node runs: java with the jars in Libs.
type Install struct {
	Java string
	Libs string // a directory of jars: the classpath
	// Version is the broker's release, read from its jar's name.
	Version string
}

// CacheDir is where `dqbench brokers fetch kafka` puts the jars:
// $DQBENCH_KAFKA_CACHE, else $XDG_CACHE_HOME/dqbench/kafka-VERSION, else
// ~/.cache/dqbench/kafka-VERSION.
func CacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "dqbench", "kafka-"+Version)
}

// FindInstall finds the broker's jars ($KAFKA_HOME/libs, else the cache
// `dqbench brokers fetch kafka` filled) and a Java runtime.
func FindInstall() (Install, error) {
	libs := filepath.Join(CacheDir(), "libs")
	where := "the cache " + libs
	if home := os.Getenv(HomeEnv); home != "" {
		libs, where = filepath.Join(home, "libs"), HomeEnv+"="+home
	}
	version := jarVersion(libs)
	if version == "" {
		return Install{}, fmt.Errorf("%w: no kafka_2.13 jar in %s; fetch Apache Kafka %s from Maven Central with \"dqbench brokers fetch kafka\" (make kafka-jars; needs mvn and Java 17), "+
			"or set %s to an unpacked Apache Kafka 4.x distribution", ErrNotInstalled, where, Version, HomeEnv)
	}
	java, err := findJava()
	if err != nil {
		return Install{}, err
	}
	return Install{Java: java, Libs: libs, Version: version}, nil
}

// jarVersion is the release of the broker jar (kafka_2.13-VERSION.jar)
// in libs, or "".
func jarVersion(libs string) string {
	ms, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-*.jar"))
	for _, m := range ms {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "kafka_2.13-"), ".jar")
		if v != "" && !strings.ContainsAny(v, "-") { // not -sources, -test
			return v
		}
	}
	return ""
}

func findJava() (string, error) {
	if home := os.Getenv(JavaHomeEnv); home != "" {
		if p := filepath.Join(home, "bin", "java"); isExec(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("java"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: no java on PATH nor in %s/bin; install a Java runtime, 17 or later (Debian: apt-get install openjdk-17-jre-headless)", ErrNotInstalled, JavaHomeEnv)
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Installed reports whether a managed Kafka can start here.
func Installed() bool {
	_, err := FindInstall()
	return err == nil
}

// Fetch copies Apache Kafka's broker jar and its runtime dependencies
// from Maven Central into CacheDir()/libs with Maven (mvn on PATH), the
// build's output going to out. A cache that has them already is left as
// it is.
func Fetch(ctx context.Context, out io.Writer) (dir string, took time.Duration, err error) {
	dir = CacheDir()
	if jarVersion(filepath.Join(dir, "libs")) == Version {
		return dir, 0, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return dir, 0, fmt.Errorf("fetch Apache Kafka %s: Maven (mvn) is not on PATH (Debian: apt-get install maven); or set %s to an unpacked Apache Kafka 4.x distribution", Version, HomeEnv)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, 0, fmt.Errorf("fetch Apache Kafka: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), pom, 0o644); err != nil {
		return dir, 0, fmt.Errorf("fetch Apache Kafka: %w", err)
	}
	// Into a new directory first, so an interrupted fetch leaves no
	// half-filled libs/ that looks installed.
	tmp := filepath.Join(dir, "libs.partial")
	_ = os.RemoveAll(tmp)
	began := time.Now()
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", filepath.Join(dir, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	cmd.Dir = dir
	// Maven 3.8 writes colour resets even with -q -B: what it says is
	// shown only when it fails.
	var said bytes.Buffer
	cmd.Stdout, cmd.Stderr = &said, &said
	if err := cmd.Run(); err != nil {
		_, _ = out.Write(said.Bytes())
		return dir, 0, fmt.Errorf("fetch Apache Kafka %s with Maven (%s): %w", Version, cmd.String(), err)
	}
	libs := filepath.Join(dir, "libs")
	if err := os.RemoveAll(libs); err != nil {
		return dir, 0, err
	}
	if err := os.Rename(tmp, libs); err != nil {
		return dir, 0, err
	}
	return dir, time.Since(began), nil
}
