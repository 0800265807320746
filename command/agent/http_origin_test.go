package agent_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A web page on another site can make its visitor's browser POST a
// text/plain body to the agent without a CORS preflight. Such a request,
// recognised by its foreign Origin, must not register a job (a raw_exec
// job runs as root on the host); the same request from a tool, without an
// Origin, or from the agent's own origin, is served.
func TestHTTP_CrossOriginWritesRefused(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	body := `{"Job": {"ID": "csrf", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`
	post := func(headers map[string]string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, a.HTTPAddr+"/v1/jobs", strings.NewReader(body))
		must.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		must.NoError(t, err)
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		sb.Write(buf[:n])
		return resp.StatusCode, sb.String()
	}

	code, msg := post(map[string]string{"Origin": "https://evil.example"})
	must.Eq(t, http.StatusForbidden, code)
	must.StrContains(t, msg, "cross-origin request refused")
	code, _ = post(map[string]string{"Sec-Fetch-Site": "cross-site"})
	must.Eq(t, http.StatusForbidden, code)
	resp, err := http.Get(a.HTTPAddr + "/v1/job/csrf")
	must.NoError(t, err)
	resp.Body.Close()
	must.Eq(t, http.StatusNotFound, resp.StatusCode, must.Sprint("nothing was registered"))

	host := strings.TrimPrefix(a.HTTPAddr, "http://")
	code, msg = post(map[string]string{"Origin": "http://" + host})
	must.Eq(t, http.StatusOK, code, must.Sprint(msg))
	code, msg = post(nil)
	must.Eq(t, http.StatusOK, code, must.Sprint(msg))
}
