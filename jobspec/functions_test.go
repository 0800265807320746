package jobspec_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"golang.org/x/crypto/bcrypt"

	"github.com/nomad-edge/nomad/jobspec"
)

// metaJob is a job whose meta holds one entry per expression.
func metaJob(exprs map[string]string) string {
	src := "job \"a\" {\n  meta = {\n"
	for k, e := range exprs {
		src += "    " + k + " = " + e + "\n"
	}
	return src + "  }\n}\n"
}

// Upstream's functions evaluate to what its documentation says, a sample
// from each family (collections, strings, numbers, encodings, hashes,
// networks, dates, conversion).
func TestFunctions_Values(t *testing.T) {
	cases := map[string]struct{ expr, want string }{
		"join":         {`join(",", concat(["a"], ["b"]))`, "a,b"},
		"format":       {`format("%s-%03d", "web", 7)`, "web-007"},
		"lookup":       {`lookup({ a = "1" }, "b", "dflt")`, "dflt"},
		"length_str":   {`length("héllo")`, "5"},
		"length_list":  {`length([1, 2, 3])`, "3"},
		"replace":      {`replace("a-b-c", "-", "_")`, "a_b_c"},
		"regex_repl":   {`regex_replace("v1.2.3", "[^0-9]", "")`, "123"},
		"max":          {`max(3, 9, 4)`, "9"},
		"parseint":     {`parseint("ff", 16)`, "255"},
		"b64":          {`base64decode(base64encode("hi"))`, "hi"},
		"json":         {`jsonencode({ a = [1] })`, `{"a":[1]}`},
		"yaml":         {`yamldecode("a: 1")["a"]`, "1"},
		"sha256":       {`sha256("x")`, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"},
		"md5":          {`md5("x")`, "9dd4e461268c8034f5c8564e155c67a6"},
		"cidrhost":     {`cidrhost("10.12.0.0/16", 5)`, "10.12.0.5"},
		"cidrhost_neg": {`cidrhost("10.12.0.0/16", -2)`, "10.12.255.254"},
		"cidrsubnet":   {`cidrsubnet("10.1.0.0/16", 8, 2)`, "10.1.2.0/24"},
		"cidrsubnets":  {`join(" ", cidrsubnets("10.1.0.0/16", 4, 8, 4))`, "10.1.0.0/20 10.1.16.0/24 10.1.32.0/20"},
		"netmask":      {`cidrnetmask("172.16.0.0/12")`, "255.240.0.0"},
		"timeadd":      {`timeadd("2024-01-01T00:00:00Z", "90m")`, "2024-01-01T01:30:00Z"},
		"timestamp":    {`timestamp()`, "2026-12-02T03:04:05Z"},
		"try":          {`try(parseint("x", 10), "fallback")`, "fallback"},
		"can":          {`can(regex("^a", "abc"))`, "true"},
		"convert":      {`convert(3, string)`, "3"},
		"uuidv5":       {`uuidv5("dns", "example.com")`, "cfbff0d1-9375-5685-968c-48ce8b15ae17"},
		"title":        {`title("edge node")`, "Edge Node"},
		"setunion":     {`join(",", sort(setunion(["b"], ["a", "b"])))`, "a,b"},
	}
	exprs := map[string]string{}
	for k, c := range cases {
		exprs[k] = c.expr
	}
	now := func() time.Time { return time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC) }
	job, err := jobspec.ParseWithOptions("f.hcl", []byte(metaJob(exprs)), jobspec.Options{Now: now})
	must.NoError(t, err)
	for k, c := range cases {
		must.Eq(t, c.want, job.Meta[k], must.Sprint(k))
	}
}

// File functions read relative to the job file's directory, not the
// working directory, so a job file and its templates move together.
func TestFunctions_FilesRelativeToJobFile(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.MkdirAll(filepath.Join(dir, "conf", "sub"), 0o755))
	for name, content := range map[string]string{
		"conf/app.conf":     "listen = 80\n",
		"conf/sub/x.conf":   "x\n",
		"conf/app.tpl":      "port=${port}\n%{ for h in hosts }${h};%{ endfor }",
		"conf/binary.bin":   "\x00\x01",
		"job.nomad.hcl":     "",
		"conf/ignored.note": "",
	} {
		must.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	job := `
job "a" {
  meta = {
    file     = file("conf/app.conf")
    exists   = fileexists("conf/app.conf")
    missing  = fileexists("conf/nope")
    set      = join(",", fileset("conf", "**/*.conf"))
    b64      = filebase64("conf/binary.bin")
    rendered = templatefile("conf/app.tpl", { port = 8080, hosts = ["a", "b"] })
    base     = basename("conf/app.conf")
  }
}
`
	path := filepath.Join(dir, "job.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(job), 0o600))
	got, err := jobspec.ParseFileWithOptions(path, jobspec.Options{})
	must.NoError(t, err)
	must.Eq(t, map[string]string{
		"file":     "listen = 80\n",
		"exists":   "true",
		"missing":  "false",
		"set":      "app.conf,sub/x.conf",
		"b64":      "AAE=",
		"rendered": "port=8080\na;b;",
		"base":     "app.conf",
	}, got.Meta)

	// With the file system off (the agent's parse endpoint) the same file
	// is refused at the call, naming why.
	_, err = jobspec.ParseWithOptions("input.hcl", []byte(job), jobspec.Options{NoFS: true, BaseDir: dir})
	must.ErrorContains(t, err, "input.hcl:4:16: Error in function call; Call to function \"file\" failed: file functions are disabled here")

	// A file that is not there is an error at the call.
	_, err = jobspec.ParseWithOptions("x.hcl", []byte("job \"a\" {\n  meta = { a = file(\"nope.txt\") }\n}\n"), jobspec.Options{BaseDir: dir})
	must.ErrorContains(t, err, "x.hcl:2:22: Invalid function argument; Invalid value for \"path\" parameter: reading nope.txt: no such file or directory")
}

// Deeply nested input is refused before a recursive decoder sees it, in a
// var file (which may come from a remote caller) and in jsondecode.
func TestFunctions_NestingLimits(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	_, err := jobspec.ParseWithOptions("x.hcl", []byte("job \"a\" {\n  meta = { a = jsonencode(jsondecode(\""+deep+"\")) }\n}\n"), jobspec.Options{})
	must.ErrorContains(t, err, "nesting deeper than 64 levels")

	_, err = jobspec.ParseWithOptions("x.hcl", []byte("variable \"v\" {\n  default = 1\n}\njob \"a\" {}\n"), jobspec.Options{VarContent: "v = " + deep + "\n"})
	must.ErrorContains(t, err, "nesting deeper than 64 levels")

	job, err := jobspec.ParseWithOptions("x.hcl", []byte("job \"a\" {\n  meta = { a = jsondecode(\"{\\\"k\\\": [1]}\").k[0] }\n}\n"), jobspec.Options{})
	must.NoError(t, err)
	must.Eq(t, "1", job.Meta["a"])
}

// bcrypt hashes verify against the input, and rsadecrypt opens what the
// matching public key sealed, as upstream's functions do.
func TestFunctions_Crypto(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	must.NoError(t, err)
	//lint:ignore SA1019 rsadecrypt is PKCS #1 v1.5 by definition
	ct, err := rsa.EncryptPKCS1v15(rand.Reader, &key.PublicKey, []byte("s3cret"))
	must.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})

	src := "variable \"key\" {\n  type = string\n}\njob \"a\" {\n  meta = {\n    plain = rsadecrypt(\"" +
		base64.StdEncoding.EncodeToString(ct) + "\", var.key)\n    hash  = bcrypt(\"pw\", 4)\n  }\n}\n"
	job, err := jobspec.ParseWithOptions("c.hcl", []byte(src), jobspec.Options{ArgVars: []string{"key=" + string(keyPEM)}})
	must.NoError(t, err)
	must.Eq(t, "s3cret", job.Meta["plain"])
	must.NoError(t, bcrypt.CompareHashAndPassword([]byte(job.Meta["hash"]), []byte("pw")))
}

// templatefile keeps the client's runtime interpolations verbatim, as the
// job file's own strings do: a rendered config may name
// ${NOMAD_ALLOC_DIR} or ${attr.kernel.name} for the client to fill in when
// the task starts. One used inside an expression cannot be kept and is
// refused by name, as is any other reference vars does not set (a typo).
func TestTemplatefile_PassesRuntimeRefs(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(dir, "app.tpl"), []byte(
		"dir=${NOMAD_ALLOC_DIR}/data port=${port} os=${ attr.kernel.name } home=${env[\"HOME\"]}\n"+
			"%{ for h in hosts ~}${h}@${node.unique.name};%{ endfor ~}\n"), 0o600))
	must.NoError(t, os.WriteFile(filepath.Join(dir, "only.tpl"), []byte("${NOMAD_TASK_DIR}"), 0o600))
	must.NoError(t, os.WriteFile(filepath.Join(dir, "expr.tpl"), []byte("${upper(NOMAD_TASK_NAME)}"), 0o600))
	must.NoError(t, os.WriteFile(filepath.Join(dir, "typo.tpl"), []byte("${prot}"), 0o600))
	parse := func(call string) (map[string]string, error) {
		job, err := jobspec.ParseWithOptions("job.hcl", []byte("job \"a\" {\n  meta = { r = "+call+" }\n}\n"), jobspec.Options{BaseDir: dir})
		if err != nil {
			return nil, err
		}
		return job.Meta, nil
	}

	meta, err := parse(`templatefile("app.tpl", { port = 8080, hosts = ["a", "b"] })`)
	must.NoError(t, err)
	must.Eq(t, "dir=${NOMAD_ALLOC_DIR}/data port=8080 os=${ attr.kernel.name } home=${env[\"HOME\"]}\na@${node.unique.name};b@${node.unique.name};", meta["r"])
	meta, err = parse(`templatefile("only.tpl", {})`)
	must.NoError(t, err)
	must.Eq(t, "${NOMAD_TASK_DIR}", meta["r"])
	meta, err = parse(`templatefile("only.tpl", { NOMAD_TASK_DIR = "/set" })`)
	must.NoError(t, err)
	must.Eq(t, "/set", meta["r"], must.Sprint("a value vars sets wins"))

	_, err = parse(`templatefile("expr.tpl", {})`)
	must.ErrorContains(t, err, `template expr.tpl uses "NOMAD_TASK_NAME" in an expression`)
	_, err = parse(`templatefile("typo.tpl", { port = 1 })`)
	must.ErrorContains(t, err, `template typo.tpl refers to "prot", which vars does not set`)
}
