package jobspec_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Template checks that every template key the client honours
// reaches the api task under upstream's wire names.
func TestParse_Template(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      template {
        data                 = "{{ with nomadVar \"nomad/jobs/web\" }}{{ .k }}{{ end }}"
        destination          = "local/app.conf"
        change_mode          = "signal"
        change_signal        = "SIGHUP"
        splay                = "10s"
        perms                = "0600"
        left_delimiter       = "[["
        right_delimiter      = "]]"
        env                  = true
        error_on_missing_key = true
        wait {
          min = "2s"
          max = "10s"
        }
      }
      template {
        source      = "local/in.tpl"
        destination = "../alloc/out.txt"
        change_mode = "script"
        uid         = 1000
        gid         = 100
        change_script {
          command       = "/bin/reload"
          args          = ["-q", "app"]
          timeout       = "2s"
          fail_on_error = true
        }
      }
    }
  }
}
`
	j, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	ts := j.TaskGroups[0].Tasks[0].Templates
	must.Len(t, 2, ts)
	must.Eq(t, &api.Template{
		EmbeddedTmpl: new(`{{ with nomadVar "nomad/jobs/web" }}{{ .k }}{{ end }}`), DestPath: new("local/app.conf"),
		ChangeMode: new("signal"), ChangeSignal: new("SIGHUP"), Splay: new(10 * time.Second), Perms: new("0600"),
		LeftDelim: new("[["), RightDelim: new("]]"), Envvars: new(true), ErrMissingKey: new(true),
		Wait: &api.WaitConfig{Min: new(2 * time.Second), Max: new(10 * time.Second)},
	}, ts[0])
	must.Eq(t, "local/in.tpl", *ts[1].SourcePath)
	must.Eq(t, 1000, *ts[1].Uid)
	must.Eq(t, 100, *ts[1].Gid)
	must.Eq(t, &api.ChangeScript{Command: new("/bin/reload"), Args: []string{"-q", "app"}, Timeout: new(2 * time.Second), FailOnError: new(true)}, ts[1].ChangeScript)
}

// TestParse_TemplateRefusals checks that a template that escapes the
// allocation directory, lacks its text or destination, has a uid that is
// not a number, a change_mode without its signal or script, a
// change_script without its command, or an unknown change_mode is
// refused at file:line:column, naming the field.
func TestParse_TemplateRefusals(t *testing.T) {
	src := `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      template {
        data        = "x"
        source      = "a"
        destination = "../../etc/passwd"
        change_mode = "script"
        uid         = "root"
        change_script {
          args = ["-q"]
        }
      }
      template {
        change_mode = "signal"
      }
      template {
        data        = "x"
        destination = "local/x"
        change_mode = "script"
      }
      template {
        data        = "x"
        destination = "local/y"
        change_mode = "reload"
      }
    }
  }
}
`
	_, err := jobspec.Parse("x.hcl", []byte(src))
	must.Error(t, err)
	for _, want := range []string{
		`x.hcl:8:23: invalid destination "../../etc/passwd" in template block of task "t": it escapes the allocation directory`,
		`x.hcl:10:23: invalid value for "uid" in template block of task "t": a whole number is required, got string`,
		`x.hcl:11:9: missing command in change_script block of template block of task "t"`,
		`x.hcl:5:7: template block of task "t": only one of source or data may be set`,
		`x.hcl:15:7: template block of task "t": one of source or data is required`,
		`x.hcl:15:7: missing destination in template block of task "t"`,
		`x.hcl:15:7: template block of task "t": change_mode "signal" needs a change_signal`,
		`x.hcl:18:7: template block of task "t": change_mode "script" needs a change_script`,
		`x.hcl:26:23: template block of task "t": invalid change_mode "reload"; must be one of noop, restart, signal, script`,
	} {
		must.StrContains(t, err.Error(), want)
	}
}
