package agent_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// An edge operator's CLI on a slow link asks for gzip (Go's HTTP client
// does by itself): a job list comes back compressed and decodes to the
// same JSON; a small answer, or a caller that does not accept gzip, gets
// plain JSON; the official client, which relies on Go's transparent
// decompression, reads it as before.
func TestHTTP_GzipAnswers(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	for i := range 30 {
		job := nomadapi.NewBatchJob(fmt.Sprintf("gz-%02d", i), fmt.Sprintf("gz-%02d", i), "global", 50)
		job.Datacenters = []string{"nowhere"} // nothing runs
		tg := nomadapi.NewTaskGroup("g", 1)
		tg.AddTask(nomadapi.NewTask("t", "mock_driver"))
		job.AddTaskGroup(tg)
		_, _, err := c.Jobs().Register(job, nil)
		must.NoError(t, err)
	}

	get := func(path, acceptEncoding string) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodGet, a.HTTPAddr+path, nil)
		must.NoError(t, err)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		// A transport that does not decompress by itself, to see the wire.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		must.NoError(t, err)
		return resp, body
	}

	// The scheduler may still be updating the jobs' summaries: compare a
	// compressed answer with plain ones read just before and after it that
	// agree with each other.
	var plain, decoded []byte
	compressedLen := 0
	var gzResp *http.Response
	for range 50 {
		var before, after []byte
		var compressed []byte
		var plainResp *http.Response
		plainResp, before = get("/v1/jobs", "")
		must.Eq(t, "", plainResp.Header.Get("Content-Encoding"))
		gzResp, compressed = get("/v1/jobs", "br;q=1.0, gzip;q=0.8")
		_, after = get("/v1/jobs", "")
		must.Eq(t, "gzip", gzResp.Header.Get("Content-Encoding"))
		must.Eq(t, "Accept-Encoding", gzResp.Header.Get("Vary"))
		zr, err := gzip.NewReader(bytes.NewReader(compressed))
		must.NoError(t, err)
		decoded, err = io.ReadAll(zr)
		must.NoError(t, err)
		plain = after
		if bytes.Equal(before, after) {
			compressedLen = len(compressed)
			break
		}
	}
	must.Eq(t, string(plain), string(decoded))
	must.Less(t, len(plain)/3, compressedLen, must.Sprintf("%d bytes compressed to %d", len(plain), compressedLen))
	t.Logf("/v1/jobs of 30 jobs: %d bytes, %d gzipped", len(plain), compressedLen)

	refused, _ := get("/v1/jobs", "gzip;q=0")
	must.Eq(t, "", refused.Header.Get("Content-Encoding"))
	small, body := get("/v1/status/leader", "gzip")
	must.Eq(t, "", small.Header.Get("Content-Encoding"), must.Sprintf("a %d-byte answer is sent as is", len(body)))

	jobs, _, err := c.Jobs().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 30, jobs)
	var stubs []map[string]any
	must.NoError(t, json.Unmarshal(plain, &stubs))
	must.SliceLen(t, 30, stubs)
}
