package main

import (
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/dqbench/dqbench/cmd"
)

// TestREADMESweepWorkflow holds docs/sweep.md's GitHub Actions sweep to what
// it must do: valid YAML, a matrix of shards 1..N each running --shard
// I/N of one sweep, and a merge job after them that runs whatever they
// ended in; every dqbench command in it parses.
func TestREADMESweepWorkflow(t *testing.T) {
	b, err := os.ReadFile("docs/sweep.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## GitHub Actions")
	if start < 0 {
		t.Fatal(`docs/sweep.md has no "## GitHub Actions"`)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(readme[start:])
	if block == nil {
		t.Fatal(`docs/sweep.md's "## GitHub Actions" has no yaml block`)
	}
	var wf struct {
		Jobs map[string]struct {
			Needs    any    `yaml:"needs"`
			If       string `yaml:"if"`
			Strategy struct {
				Matrix struct {
					Shard []int `yaml:"shard"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(block[1]), &wf); err != nil {
		t.Fatalf("the workflow is not valid YAML: %v", err)
	}
	sweepJob, mergeJob := wf.Jobs["sweep"], wf.Jobs["merge"]
	shards := sweepJob.Strategy.Matrix.Shard
	for i, s := range shards {
		if s != i+1 {
			t.Errorf("matrix.shard is %v, want 1..N", shards)
		}
	}
	if mergeJob.Needs != "sweep" || mergeJob.If != "always()" {
		t.Errorf("merge job: needs %v, if %q; want needs sweep, if always() (a failing shard must still be merged)", mergeJob.Needs, mergeJob.If)
	}
	var commands []string
	for _, job := range []string{"sweep", "merge"} {
		for _, st := range wf.Jobs[job].Steps {
			if strings.HasPrefix(st.Run, "dqbench ") {
				commands = append(commands, st.Run)
			}
		}
	}
	want := []string{"--shard ${{ matrix.shard }}/" + strconv.Itoa(len(shards)), "dqbench merge shards/"}
	for _, w := range want {
		if !strings.Contains(strings.Join(commands, "\n"), w) {
			t.Errorf("the workflow's commands do not say %q:\n%s", w, strings.Join(commands, "\n"))
		}
	}
	for _, c := range commands {
		line, _, _ := strings.Cut(c, " >")
		line, _, _ = strings.Cut(line, " #")
		line = strings.ReplaceAll(line, "${{ matrix.shard }}", "1")
		args := strings.Fields(line)[1:]
		root := cmd.NewRoot(cmd.Streams{Out: io.Discard, Err: io.Discard})
		sub, rest, err := root.Find(args)
		if err == nil {
			err = sub.ParseFlags(rest)
		}
		if err != nil || sub == root {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// TestSweepKubernetesJob holds docs/sweep.md's Indexed Job to what it must
// do: a batch/v1 Job, completionMode Indexed, as many completions as
// shards, each pod running --shard JOB_COMPLETION_INDEX+1/N of one sweep
// into the shared volume, and a dqbench command that parses.
func TestSweepKubernetesJob(t *testing.T) {
	b, err := os.ReadFile("docs/sweep.md")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Parallelism    int    `yaml:"parallelism"`
			Template       struct {
				Spec struct {
					RestartPolicy string `yaml:"restartPolicy"`
					Containers    []struct {
						Args         []string `yaml:"args"`
						VolumeMounts []struct {
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	var found bool
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], "kind: Job") {
			found = true
			if err := yaml.Unmarshal([]byte(m[1]), &job); err != nil {
				t.Fatalf("the Job is not valid YAML: %v", err)
			}
		}
	}
	if !found {
		t.Fatal("docs/sweep.md has no Kubernetes Job")
	}
	s := job.Spec
	if job.APIVersion != "batch/v1" || s.CompletionMode != "Indexed" || s.Completions < 2 || s.Parallelism != s.Completions || s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("job %+v: want a batch/v1 Indexed Job, completions = parallelism, restartPolicy Never", job)
	}
	if len(s.Template.Spec.Containers) != 1 || len(s.Template.Spec.Containers[0].Args) != 1 {
		t.Fatalf("want one container with one shell argument: %+v", s.Template.Spec.Containers)
	}
	c := s.Template.Spec.Containers[0]
	script := c.Args[0]
	shard := "--shard $((JOB_COMPLETION_INDEX + 1))/" + strconv.Itoa(s.Completions)
	if !strings.Contains(script, shard) || len(c.VolumeMounts) != 1 || !strings.Contains(script, "> "+c.VolumeMounts[0].MountPath+"/shard-") {
		t.Errorf("the pod's script %q: want %q, its JSON written to the mounted volume", script, shard)
	}
	_, line, _ := strings.Cut(script, "&& ")
	line, _, _ = strings.Cut(line, " >")
	line = strings.ReplaceAll(line, "$((JOB_COMPLETION_INDEX + 1))", "1")
	root := cmd.NewRoot(cmd.Streams{Out: io.Discard, Err: io.Discard})
	sub, rest, err := root.Find(strings.Fields(line)[1:])
	if err == nil {
		err = sub.ParseFlags(rest)
	}
	if err != nil || sub.Name() != "sweep" {
		t.Errorf("%s: %v", line, err)
	}
}
