package command

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/helper/tlsutil/tlstest"
)

func aclCmd[T cli.Command](mk func(Meta) T) func(Meta) cli.Command {
	return func(m Meta) cli.Command { return mk(m) }
}

var secretRE = regexp.MustCompile(`Secret ID\s+= (\S+)`)
var accessorRE = regexp.MustCompile(`Accessor ID\s+= (\S+)`)

// The operator's path through the CLI on a cluster with tls and acl:
// bootstrap once, apply a policy, make a token holding it, and use it
// with -token and NOMAD_TOKEN; a read-only token reads but cannot run a
// job, and no token gets a 403 naming what to set.
func TestACL_CLI_TLSCluster(t *testing.T) {
	ca := tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	cliPair := ca.Issue(t, tlsutil.RoleCLI, "global", tlstest.Options{})
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.TLSConfig = &agent.TLSConfig{
			EnableHTTP: true, EnableRPC: true, VerifyServerHostname: true, VerifyHTTPSClient: true,
			CAFile: server.CAFile, CertFile: server.CertFile, KeyFile: server.KeyFile,
		}
		c.ACL = &agent.ACLConfig{Enabled: true}
	})
	tlsFlags := []string{"-ca-cert", ca.CAFile, "-client-cert", cliPair.CertFile, "-client-key", cliPair.KeyFile}
	with := func(extra ...string) []string { return append(append([]string{}, tlsFlags...), extra...) }

	bootstrap := aclCmd(func(m Meta) *ACLBootstrapCommand { return &ACLBootstrapCommand{Meta: m} })
	code, out, stderr := run(t, a, bootstrap, tlsFlags...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Type         = management")
	mgmt := secretRE.FindStringSubmatch(out)[1]
	code, _, stderr = run(t, a, bootstrap, tlsFlags...)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "ACL bootstrap already done")

	code, _, stderr = run(t, a, nodeStatus, tlsFlags...)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "403")
	must.StrContains(t, stderr, "NOMAD_TOKEN")

	rules := filepath.Join(t.TempDir(), "readonly.hcl")
	must.NoError(t, os.WriteFile(rules, []byte(`namespace "default" { policy = "read" }`+"\n"), 0o600))
	apply := aclCmd(func(m Meta) *ACLPolicyApplyCommand { return &ACLPolicyApplyCommand{Meta: m} })
	code, out, stderr = run(t, a, apply, with("-token", mgmt, "-description", "read jobs", "readonly", rules)...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, `Successfully wrote "readonly" ACL policy!`)

	code, out, stderr = run(t, a, aclCmd(func(m Meta) *ACLPolicyListCommand { return &ACLPolicyListCommand{Meta: m} }), with("-token", mgmt)...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.Eq(t, []string{"readonly", "read jobs"}, columns(splitLines(out)[1]))
	code, out, stderr = run(t, a, aclCmd(func(m Meta) *ACLPolicyInfoCommand { return &ACLPolicyInfoCommand{Meta: m} }), with("-token", mgmt, "readonly")...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, `namespace "default" { policy = "read" }`)

	create := aclCmd(func(m Meta) *ACLTokenCreateCommand { return &ACLTokenCreateCommand{Meta: m} })
	code, out, stderr = run(t, a, create, with("-token", mgmt, "-name", "ci", "-policy", "readonly")...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	reader := secretRE.FindStringSubmatch(out)[1]
	readerAccessor := accessorRE.FindStringSubmatch(out)[1]

	jobFile := writeJob(t, "acl-cli", "mock_driver", `run_for = "1m"`)
	code, _, stderr = run(t, a, jobRun, with("-token", reader, "-detach", jobFile)...)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "submit-job")
	code, _, stderr = run(t, a, jobRun, with("-token", mgmt, "-detach", jobFile)...)
	must.Eq(t, 0, code, must.Sprint(stderr))

	t.Setenv("NOMAD_TOKEN", reader)
	code, out, stderr = run(t, a, jobStatusCmd, tlsFlags...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "acl-cli")
	code, out, stderr = run(t, a, aclCmd(func(m Meta) *ACLTokenSelfCommand { return &ACLTokenSelfCommand{Meta: m} }), tlsFlags...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, readerAccessor)
	code, _, _ = run(t, a, aclCmd(func(m Meta) *ACLTokenListCommand { return &ACLTokenListCommand{Meta: m} }), tlsFlags...)
	must.Eq(t, 1, code)

	code, out, stderr = run(t, a, aclCmd(func(m Meta) *ACLTokenListCommand { return &ACLTokenListCommand{Meta: m} }), with("-token", mgmt)...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.Eq(t, []string{"Name", "Type", "Global", "Accessor ID"}, columns(splitLines(out)[0]))
	must.Len(t, 3, splitLines(out))

	// -t and -json give scripts the data without the tables.
	for _, tc := range []struct {
		cmd  func(Meta) cli.Command
		args []string
		want string
	}{
		{aclCmd(func(m Meta) *ACLTokenListCommand { return &ACLTokenListCommand{Meta: m} }), []string{"-t", `{{range .}}{{.Name}},{{end}}`}, "ci,"},
		{aclCmd(func(m Meta) *ACLTokenInfoCommand { return &ACLTokenInfoCommand{Meta: m} }), []string{"-t", `{{.Name}}`, readerAccessor}, "ci"},
		{aclCmd(func(m Meta) *ACLTokenSelfCommand { return &ACLTokenSelfCommand{Meta: m} }), []string{"-t", `{{.Type}}`}, "management"},
		{aclCmd(func(m Meta) *ACLPolicyListCommand { return &ACLPolicyListCommand{Meta: m} }), []string{"-t", `{{range .}}{{.Name}}{{end}}`}, "readonly"},
		{aclCmd(func(m Meta) *ACLPolicyInfoCommand { return &ACLPolicyInfoCommand{Meta: m} }), []string{"-json", "readonly"}, `"Rules": "namespace \"default\" { policy = \"read\" }\n"`},
	} {
		code, out, stderr = run(t, a, tc.cmd, with(append([]string{"-token", mgmt}, tc.args...)...)...)
		must.Eq(t, 0, code, must.Sprint(stderr))
		must.StrContains(t, out, tc.want)
	}

	code, _, stderr = run(t, a, aclCmd(func(m Meta) *ACLTokenDeleteCommand { return &ACLTokenDeleteCommand{Meta: m} }), with("-token", mgmt, readerAccessor)...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	code, _, stderr = run(t, a, jobStatusCmd, tlsFlags...)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "ACL token not found")
	code, _, stderr = run(t, a, aclCmd(func(m Meta) *ACLPolicyDeleteCommand { return &ACLPolicyDeleteCommand{Meta: m} }), with("-token", mgmt, "readonly")...)
	must.Eq(t, 0, code, must.Sprint(stderr))
}

func splitLines(s string) []string {
	return regexp.MustCompile(`\r?\n`).Split(regexp.MustCompile(`\s+$`).ReplaceAllString(s, ""), -1)
}

// `acl bootstrap <path>` makes the first token with the operator's secret
// from the file, and `acl token create -ttl` a token that expires, shown
// with its Expiry Time (the bootstrap token's is <never>), as upstream's.
func TestACL_CLI_BootstrapSecretAndTTL(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	secret := "5b1c0a2e-7d34-4f6a-8e21-93c4d5e6f708"
	path := filepath.Join(t.TempDir(), "bootstrap.token")
	must.NoError(t, os.WriteFile(path, []byte(secret+"\n"), 0o600))

	bootstrap := aclCmd(func(m Meta) *ACLBootstrapCommand { return &ACLBootstrapCommand{Meta: m} })
	code, out, stderr := run(t, a, bootstrap, path)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.Eq(t, secret, secretRE.FindStringSubmatch(out)[1])
	must.StrContains(t, out, "Expiry Time  = <never>")

	create := aclCmd(func(m Meta) *ACLTokenCreateCommand { return &ACLTokenCreateCommand{Meta: m} })
	code, out, stderr = run(t, a, create, "-token", secret, "-type", "management", "-ttl", "1h")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrNotContains(t, out, "<never>")
	code, _, stderr = run(t, a, create, "-token", secret, "-type", "management", "-ttl", "5s")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "expiration time cannot be less than 1m0s")
}

// `acl policy apply -namespace -job -group -task` attaches a policy to
// workloads, as upstream's: each flag needing the ones before it is
// refused with upstream's message before anything is written, and `acl
// policy info` shows the attachment under "Associated Workload" (an
// operator must see which tasks a policy reaches).
func TestACL_CLI_PolicyAttachedToWorkload(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	code, out, stderr := run(t, a, aclCmd(func(m Meta) *ACLBootstrapCommand { return &ACLBootstrapCommand{Meta: m} }))
	must.Eq(t, 0, code, must.Sprint(stderr))
	mgmt := secretRE.FindStringSubmatch(out)[1]
	rules := filepath.Join(t.TempDir(), "shared.hcl")
	must.NoError(t, os.WriteFile(rules, []byte(`namespace "default" { policy = "read" }`+"\n"), 0o600))
	apply := aclCmd(func(m Meta) *ACLPolicyApplyCommand { return &ACLPolicyApplyCommand{Meta: m} })
	info := aclCmd(func(m Meta) *ACLPolicyInfoCommand { return &ACLPolicyInfoCommand{Meta: m} })

	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-job", "web"}, "-namespace is required if -job is set"},
		{[]string{"-namespace", "default"}, "-job is required if -namespace is set"},
		{[]string{"-namespace", "default", "-group", "g"}, "-job is required if -group is set"},
		{[]string{"-namespace", "default", "-job", "web", "-task", "t"}, "-group is required if -task is set"},
	} {
		code, _, stderr = run(t, a, apply, append(append([]string{"-token", mgmt}, tc.flags...), "shared", rules)...)
		must.Eq(t, 1, code, must.Sprint(tc.flags))
		must.StrContains(t, stderr, tc.want)
	}
	code, _, stderr = run(t, a, info, "-token", mgmt, "shared")
	must.Eq(t, 1, code, must.Sprint("nothing was written by a refused apply"))
	must.StrContains(t, stderr, "not found")

	code, out, stderr = run(t, a, apply, "-token", mgmt, "-namespace", "default", "-job", "web", "-group", "cache", "shared", rules)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, `Successfully wrote "shared" ACL policy!`)
	code, out, stderr = run(t, a, info, "-token", mgmt, "shared")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Description = <none>")
	lines := splitLines(out[strings.Index(out, "Associated Workload"):])
	must.Eq(t, []string{"Associated Workload", "Namespace = default", "JobID     = web", "Group     = cache", "Task      = <none>"}, lines[:5])
	code, out, stderr = run(t, a, info, "-token", mgmt, "-json", "shared")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, `"JobID": "web"`)
}
