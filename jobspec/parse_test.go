package jobspec_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

func testdata(name string) string { return filepath.Join("testdata", name) }

// parseErr parses src and returns the error lines, failing if it parsed.
func parseErr(t *testing.T, filename, src string) []string {
	t.Helper()
	job, err := jobspec.Parse(filename, []byte(src))
	must.Error(t, err)
	must.Nil(t, job)
	var pe *jobspec.ParseError
	must.True(t, errors.As(err, &pe), must.Sprint("error must be a *ParseError"))
	must.Eq(t, len(pe.Diagnostics), len(strings.Split(err.Error(), "\n")))
	return strings.Split(err.Error(), "\n")
}

// Every supported block and attribute lands in the right api.Job field,
// with nothing canonicalized: the server must see what the file said.
func TestParse_Full(t *testing.T) {
	job, err := jobspec.ParseFile(testdata("full.nomad.hcl"))
	must.NoError(t, err)

	want := &api.Job{
		ID:          new("edge-cache"),
		Name:        new("edge-cache"),
		Region:      new("eu"),
		Namespace:   new("edge"),
		Datacenters: []string{"dc1", "dc2"},
		Type:        new("service"),
		Priority:    new(70),
		NodePool:    new("lte"),
		AllAtOnce:   new(true),
		Meta:        map[string]string{"owner": "ops", "tier": "edge"},
		Constraints: []*api.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}},
		Affinities:  []*api.Affinity{{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1", Weight: new(int8(-30))}},
		TaskGroups: []*api.TaskGroup{
			{
				Name:                      new("cache"),
				Count:                     new(3),
				MaxClientDisconnect:       new(2 * time.Hour),
				StopAfterClientDisconnect: new(90 * time.Second),
				Constraints:               []*api.Constraint{{Operand: api.ConstraintDistinctHosts}},
				Affinities:                []*api.Affinity{{LTarget: "${meta.rack}", Operand: "!=", RTarget: "r1", Weight: new(int8(0))}},
				RestartPolicy: &api.RestartPolicy{
					Attempts: new(4), Interval: new(10 * time.Minute), Delay: new(5 * time.Second), Mode: new("delay"),
				},
				ReschedulePolicy: &api.ReschedulePolicy{
					Attempts: new(2), Interval: new(time.Hour), Delay: new(10 * time.Second),
					DelayFunction: new("fibonacci"), MaxDelay: new(5 * time.Minute), Unlimited: new(false),
				},
				EphemeralDisk: &api.EphemeralDisk{SizeMB: new(500), Sticky: new(true), Migrate: new(true)},
				Meta:          map[string]string{"rack.zone": "a"},
				Tasks: []*api.Task{{
					Name:        "redis",
					Driver:      "mock_driver",
					KillTimeout: new(20 * time.Second),
					KillSignal:  "SIGINT",
					User:        "redis",
					Leader:      true,
					Config: map[string]any{
						"run_for":   "30s",
						"exit_code": 0,
						"ratio":     0.5,
						"verbose":   true,
						"args":      []any{"-c", "${NOMAD_TASK_DIR}/redis.conf"},
						"labels":    map[string]any{"app": "redis"},
						"mount": []map[string]any{
							{"source": "/data"},
							{"source": "/logs"},
						},
					},
					Env:  map[string]string{"PORT": "6379", "DIR": "${NOMAD_ALLOC_DIR}/data"},
					Meta: map[string]string{"role": "primary"},
					Resources: &api.Resources{
						CPU: new(250), Cores: new(0), MemoryMB: new(128), MemoryMaxMB: new(256),
					},
					RestartPolicy: &api.RestartPolicy{Attempts: new(1)},
					Constraints:   []*api.Constraint{{LTarget: "${attr.cpu.arch}", Operand: "version", RTarget: ">= 1.2"}},
					Affinities: []*api.Affinity{{
						LTarget: "${node.class}", Operand: "set_contains_any", RTarget: "fast,ssd", Weight: new(int8(100)),
					}},
				}},
			},
			{
				Name: new("agent"),
				Disconnect: &api.DisconnectStrategy{
					LostAfter:         new(time.Hour),
					StopOnClientAfter: new(30 * time.Minute),
					Replace:           new(false),
					Reconcile:         new("keep_original"),
				},
				Tasks: []*api.Task{{
					Name:   "agent",
					Driver: "raw_exec",
					Config: map[string]any{"command": "/usr/bin/agent"},
				}},
			},
		},
	}
	must.Eq(t, want, job)
}

// The smallest useful file gives a job whose ID and name are the label and
// whose every other field is unset, for the server to default.
func TestParse_Minimal(t *testing.T) {
	job, err := jobspec.ParseFile(testdata("minimal.nomad.hcl"))
	must.NoError(t, err)
	must.Eq(t, &api.Job{
		ID:   new("hello"),
		Name: new("hello"),
		TaskGroups: []*api.TaskGroup{{
			Name:  new("g"),
			Tasks: []*api.Task{{Name: "t", Driver: "mock_driver"}},
		}},
	}, job)

	// Canonicalizing the parsed job must work and give upstream's defaults;
	// the CLI relies on that for `job run -output` style inspection.
	job.Canonicalize()
	must.Eq(t, api.DefaultNamespace, *job.Namespace)
	must.Eq(t, 1, *job.TaskGroups[0].Count)
	must.Eq(t, api.DefaultCPU, *job.TaskGroups[0].Tasks[0].Resources.CPU)
}

// A job-level disconnect block is inherited only by groups that say nothing
// about disconnects; a group's own block or legacy field wins, so the
// server never sees the contradictory "legacy plus block" combination.
func TestParse_JobLevelDisconnectInherited(t *testing.T) {
	job, err := jobspec.ParseFile(testdata("job_disconnect.nomad.hcl"))
	must.NoError(t, err)
	must.Len(t, 3, job.TaskGroups)

	inherits := job.LookupTaskGroup("inherits")
	must.Eq(t, &api.DisconnectStrategy{LostAfter: new(6 * time.Hour), Replace: new(false)}, inherits.Disconnect)

	own := job.LookupTaskGroup("own-block")
	must.Eq(t, &api.DisconnectStrategy{LostAfter: new(5 * time.Minute)}, own.Disconnect)

	legacy := job.LookupTaskGroup("legacy")
	must.Nil(t, legacy.Disconnect)
	must.Eq(t, 10*time.Minute, *legacy.MaxClientDisconnect)
}

// disconnect.offline_restart (ours; see "Offline reboot" in
// docs/concepts/disconnected-clients.md) is read in the group's block and
// inherited from the job's like the block's other settings.
func TestParse_OfflineRestart(t *testing.T) {
	job, err := jobspec.ParseFile(testdata("offline_restart.nomad.hcl"))
	must.NoError(t, err)
	must.Eq(t, &api.DisconnectStrategy{LostAfter: new(6 * time.Hour), OfflineRestart: new(false)},
		job.LookupTaskGroup("inherits").Disconnect)
	must.Eq(t, &api.DisconnectStrategy{LostAfter: new(time.Hour), OfflineRestart: new(true)},
		job.LookupTaskGroup("own").Disconnect)

	_, err = jobspec.Parse("bad.nomad.hcl", []byte(`job "j" {
  group "g" {
    disconnect {
      offline_restart = "sometimes"
    }
    task "t" {
      driver = "mock_driver"
    }
  }
}`))
	must.ErrorContains(t, err, "offline_restart")
	must.ErrorContains(t, err, "bad.nomad.hcl:4:")
}

// Constraint shorthands map to upstream's operand/target slots.
func TestParse_ConstraintShorthands(t *testing.T) {
	cases := []struct {
		name string
		body string
		want *api.Constraint // nil: no constraint at all
	}{
		{"default operator", `attribute = "${attr.os.name}"
			value = "ubuntu"`, &api.Constraint{LTarget: "${attr.os.name}", Operand: "=", RTarget: "ubuntu"}},
		{"distinct_hosts", `distinct_hosts = true`, &api.Constraint{Operand: "distinct_hosts"}},
		{"distinct_hosts false drops it", `distinct_hosts = false`, nil},
		{"explicit distinct_hosts", `operator = "distinct_hosts"
			value = "true"`, &api.Constraint{Operand: "distinct_hosts", RTarget: "true"}},
		{"distinct_property", `distinct_property = "${meta.rack}"
			value = "2"`, &api.Constraint{LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "2"}},
		{"regexp", `attribute = "${attr.os.name}"
			regexp = "^ub"`, &api.Constraint{LTarget: "${attr.os.name}", Operand: "regexp", RTarget: "^ub"}},
		{"semver", `attribute = "${attr.nomad.version}"
			semver = ">= 1.8.0"`, &api.Constraint{LTarget: "${attr.nomad.version}", Operand: "semver", RTarget: ">= 1.8.0"}},
		{"set_contains", `attribute = "${meta.tags}"
			set_contains = "a,b"`, &api.Constraint{LTarget: "${meta.tags}", Operand: "set_contains", RTarget: "a,b"}},
		{"is_set", `attribute = "${meta.gpu}"
			operator = "is_set"`, &api.Constraint{LTarget: "${meta.gpu}", Operand: "is_set"}},
		{"index traversal kept verbatim", `attribute = "${attr["unique.hostname"]}"
			value = "edge-1"`, &api.Constraint{LTarget: `${attr["unique.hostname"]}`, Operand: "=", RTarget: "edge-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "job \"j\" {\n  constraint {\n" + tc.body + "\n  }\n}\n"
			job, err := jobspec.Parse("c.hcl", []byte(src))
			must.NoError(t, err)
			if tc.want == nil {
				must.SliceEmpty(t, job.Constraints)
				return
			}
			must.Eq(t, []*api.Constraint{tc.want}, job.Constraints)
		})
	}
}

// Attribute values convert the way HCL users expect: numbers where strings
// are wanted are fine, `null` means unset, heredocs and escapes work, and
// `$${` yields a literal "${".
func TestParse_ValueForms(t *testing.T) {
	src := `job "j" {
  priority  = null
  namespace = 42
  meta {
    note = <<EOT
line ${NOMAD_JOB_NAME}
EOT
    esc  = "a\tb $${literal}"
  }
  group "g" {
    count = "3"
    task "t" {
      driver = "mock_driver"
      config {
        skipped = null
        big     = 10000000000
      }
    }
  }
}
`
	job, err := jobspec.Parse("v.hcl", []byte(src))
	must.NoError(t, err)
	must.Nil(t, job.Priority)
	must.Eq(t, "42", *job.Namespace)
	must.Eq(t, map[string]string{"note": "line ${NOMAD_JOB_NAME}\n", "esc": "a\tb ${literal}"}, job.Meta)
	must.Eq(t, 3, *job.TaskGroups[0].Count)
	must.Eq(t, map[string]any{"big": 10000000000}, job.TaskGroups[0].Tasks[0].Config)
}

// Upstream-only blocks and attributes fail loudly, each with its position
// and its enclosing block, all in one error.
func TestParse_UnsupportedFile(t *testing.T) {
	_, err := jobspec.ParseFile(testdata("unsupported.nomad.hcl"))
	must.Error(t, err)
	f := testdata("unsupported.nomad.hcl")
	must.Eq(t, strings.Join([]string{
		f + `:4:5: update block of job "example": health_check must be one of "checks", "task_states", "manual" (got "consul")`,
		f + `:9:7: unsupported block "port" in scaling block of group "web"`,
		f + `:15:20: service block of task "web": provider "consul" is not supported: there is no Consul integration; use provider = "nomad" (the default)`,
		f + `:17:7: unsupported attribute "kind" in task "web"`,
		f + `:18:7: unsupported block "vault" in task "web"`,
	}, "\n"), err.Error())
}

// Wrong values are reported with the attribute, its block and the position
// of the value; a negative count is left to server-side validation.
func TestParse_BadValuesFile(t *testing.T) {
	_, err := jobspec.ParseFile(testdata("bad_values.nomad.hcl"))
	must.Error(t, err)
	f := testdata("bad_values.nomad.hcl")
	must.Eq(t, strings.Join([]string{
		f + `:2:14: invalid value for "priority" in job "example": a whole number is required, got string`,
		f + `:6:29: invalid duration for "max_client_disconnect" in group "web": "1 hour" is not a duration such as "30s" or "1h"`,
		f + `:9:18: invalid duration for "interval" in restart block of group "web": a string such as "30s" or "1h" is required, got number`,
		f + `:10:18: invalid duration for "delay" in restart block of group "web": "5x" is not a duration such as "30s" or "1h"`,
		f + `:15:22: invalid duration for "kill_timeout" in task "web": "soon" is not a duration such as "30s" or "1h"`,
		f + `:16:22: invalid value for "leader" in task "web": a bool is required, got string`,
		f + `:21:21: invalid value for "weight" in affinity block of task "web": must be between -128 and 127, got 500`,
	}, "\n"), err.Error())
}

// Syntax errors come from HCL's parser, with position, and stop decoding so
// no confusing follow-on errors appear.
func TestParse_Malformed(t *testing.T) {
	_, err := jobspec.ParseFile(testdata("malformed.nomad.hcl"))
	must.Error(t, err)
	must.StrHasPrefix(t, testdata("malformed.nomad.hcl")+":3:", err.Error())
	var pe *jobspec.ParseError
	must.True(t, errors.As(err, &pe))
	must.SliceNotEmpty(t, pe.Diagnostics)
}

// A missing file is an ordinary wrapped OS error, not a ParseError.
func TestParseFile_Missing(t *testing.T) {
	_, err := jobspec.ParseFile(testdata("does-not-exist.hcl"))
	must.Error(t, err)
	var pe *jobspec.ParseError
	must.False(t, errors.As(err, &pe))
}

// Structural mistakes get messages that say what is wrong and where.
func TestParse_StructureErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"empty file", ``,
			[]string{`x.hcl:1:1: no job block found; a job file holds one job "<ID>" { ... } block`}},
		{"two jobs", "job \"a\" {}\njob \"b\" {}\n",
			[]string{`x.hcl:2:1: duplicate job block in the file; the first is at x.hcl:1:1`}},
		{"job without label", "job {\n}\n",
			[]string{`x.hcl:1:1: job block in the file needs exactly one label, the job ID: job "<name>" { ... }`}},
		{"group with two labels", "job \"a\" {\n  group \"x\" \"y\" {}\n}\n",
			[]string{`x.hcl:2:13: group block in job "a" needs exactly one label, the group name: group "<name>" { ... }`}},
		{"labelled restart", "job \"a\" {\n  group \"g\" {\n    restart \"x\" {}\n  }\n}\n",
			[]string{`x.hcl:3:13: restart block in group "g" takes no label`}},
		{"duplicate restart", "job \"a\" {\n  group \"g\" {\n    restart {}\n    restart {}\n  }\n}\n",
			[]string{`x.hcl:4:5: duplicate restart block in group "g"; the first is at x.hcl:3:5`}},
		{"meta as block and attribute", "job \"a\" {\n  meta = { a = \"b\" }\n  meta { c = \"d\" }\n}\n",
			[]string{`x.hcl:3:3: duplicate meta block in job "a"; the first is at x.hcl:2:3`}},
		{"block used as attribute", "job \"a\" {\n  group \"g\" {\n    restart = {}\n  }\n}\n",
			[]string{`x.hcl:3:5: "restart" in group "g" must be a block, not an attribute: restart { ... }`}},
		{"attribute used as block", "job \"a\" {\n  group \"g\" {\n    count {}\n  }\n}\n",
			[]string{`x.hcl:3:5: "count" in group "g" must be an attribute, not a block: count = ...`}},
		{"variable without a value", "variable \"x\" {}\njob \"a\" {}\n",
			[]string{`x.hcl:1:1: variable "x" has no value: give it a default, or set it with -var x=..., a -var-file, or the NOMAD_VAR_x environment variable`}},
		{"block in locals", "locals {\n  x {}\n}\njob \"a\" {}\n",
			[]string{`x.hcl:2:3: unsupported block "x" in locals block; it holds only name = expression pairs`}},
		{"top-level attribute", "x = 1\njob \"a\" {}\n",
			[]string{`x.hcl:1:1: unsupported attribute "x" in the file`}},
		{"unknown attribute in nested block", "job \"a\" {\n  group \"g\" {\n    reschedule {\n      tries = 1\n    }\n  }\n}\n",
			[]string{`x.hcl:4:7: unsupported attribute "tries" in reschedule block of group "g"`}},
		{"block inside meta", "job \"a\" {\n  meta {\n    x {}\n  }\n}\n",
			[]string{`x.hcl:3:5: unsupported block "x" in meta block of job "a"; it holds only key = value pairs`}},
		{"unsupported resources attribute", "job \"a\" {\n  group \"g\" {\n    task \"t\" {\n      resources {\n        disk = 10\n        network {}\n      }\n    }\n  }\n}\n",
			[]string{
				`x.hcl:5:9: unsupported attribute "disk" in resources block of task "t"`,
				`x.hcl:6:9: unsupported block "network" in resources block of task "t"`,
			}},
		{"undeclared variable", "job \"a\" {\n  region = var.region\n}\n",
			[]string{`x.hcl:2:12: undefined variable "region": declare it in the job file: variable "region" { ... }`}},
		{"bare client reference", "job \"a\" {\n  region = attr.x\n}\n",
			[]string{`x.hcl:2:12: unknown reference attr.x; to leave an interpolation for the client, quote it: "${attr.x}"`}},
		{"unknown function", "job \"a\" {\n  region = upperr(\"eu\")\n}\n",
			[]string{`x.hcl:2:12: Call to unknown function; There is no function named "upperr". Did you mean "upper"?`}},
		{"wrong list type", "job \"a\" {\n  datacenters = \"dc1\"\n}\n",
			[]string{`x.hcl:2:17: invalid value for "datacenters" in job "a": a list of strings is required, got string`}},
		// Exact digits of 1e9999999 took minutes: the message gives the
		// magnitude (found by FuzzParse).
		{"huge count", "job \"a\" {\n  group \"g\" {\n    count = 1.5e9999999\n  }\n}\n",
			[]string{`x.hcl:3:13: invalid value for "count" in group "g": must be between -9223372036854775808 and 9223372036854775807, got about 1e9999999`}},
		{"fractional count", "job \"a\" {\n  group \"g\" {\n    count = 1.5\n  }\n}\n",
			[]string{`x.hcl:3:13: invalid value for "count" in group "g": a whole number is required, got 1.5`}},
		{"labelled config sub-block", "job \"a\" {\n  group \"g\" {\n    task \"t\" {\n      config {\n        port \"http\" {}\n      }\n    }\n  }\n}\n",
			[]string{`x.hcl:5:14: port block in config block of task "t" takes no label`}},
		{"shorthand conflicts with operator", "job \"a\" {\n  constraint {\n    operator = \"=\"\n    version = \"1\"\n  }\n}\n",
			[]string{`x.hcl:4:5: "operator" and "version" cannot both be set in constraint block of job "a"`}},
		{"two shorthands", "job \"a\" {\n  constraint {\n    regexp = \"a\"\n    semver = \"1\"\n  }\n}\n",
			[]string{`x.hcl:4:5: "regexp" and "semver" cannot both be set in constraint block of job "a"; each chooses the operator`}},
		{"distinct_hosts in affinity", "job \"a\" {\n  affinity {\n    distinct_hosts = true\n  }\n}\n",
			[]string{`x.hcl:3:5: unsupported attribute "distinct_hosts" in affinity block of job "a"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, parseErr(t, "x.hcl", tc.src))
		})
	}
}

// A negative count is a validation problem, not a parse problem: the
// server reports it together with every other validation error.
func TestParse_NegativeCountIsNotAParseError(t *testing.T) {
	job, err := jobspec.Parse("n.hcl", []byte("job \"a\" {\n  group \"g\" {\n    count = -1\n  }\n}\n"))
	must.NoError(t, err)
	must.Eq(t, -1, *job.TaskGroups[0].Count)
}

// The update block is read at job and group level; the group's fields win
// over the job's once the job is canonicalized, as upstream's client does.
func TestParse_UpdateBlock(t *testing.T) {
	src := `
job "web" {
  update {
    max_parallel     = 2
    health_check     = "task_states"
    min_healthy_time = "5s"
    auto_revert      = true
  }
  group "app" {
    update {
      canary       = 1
      auto_promote = true
      max_parallel = 3
    }
    task "t" {
      driver = "raw_exec"
    }
  }
}
`
	job, err := jobspec.Parse("u.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, 2, *job.Update.MaxParallel)
	job.Canonicalize()
	u := job.TaskGroups[0].Update
	must.Eq(t, 3, *u.MaxParallel)
	must.Eq(t, 1, *u.Canary)
	must.True(t, *u.AutoRevert)
	must.True(t, *u.AutoPromote)
	must.Eq(t, 5*time.Second, *u.MinHealthyTime)
	must.Eq(t, "task_states", *u.HealthCheck)
	must.Eq(t, 5*time.Minute, *u.HealthyDeadline)
}

// A group's migrate block, which drains honour, is read with its keys; an
// unknown key is named with its position.
func TestParse_Migrate(t *testing.T) {
	job, err := jobspec.Parse("m.nomad.hcl", []byte(`job "j" {
  group "g" {
    migrate {
      max_parallel = 2
      health_check = "task_states"
    }
    task "t" {
      driver = "mock_driver"
    }
  }
}`))
	must.NoError(t, err)
	must.Eq(t, &api.MigrateStrategy{MaxParallel: new(2), HealthCheck: new("task_states")}, job.TaskGroups[0].Migrate)

	_, err = jobspec.Parse("m.nomad.hcl", []byte(`job "j" {
  group "g" {
    migrate {
      max_paralel = 2
    }
  }
}`))
	must.ErrorContains(t, err, `m.nomad.hcl:4:7`)
}
