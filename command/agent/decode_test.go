package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/nesting"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func decodeString(t *testing.T, body string, out any) error {
	t.Helper()
	r := httptest.NewRequest(http.MethodPut, "/v1/jobs", strings.NewReader(body))
	return decodeBody(r, out)
}

// Upstream's clients send every field of their structs; the empty ones we
// do not implement must not make a valid job fail to register.
func TestDecodeBody_EmptyUnknownFieldsAreDropped(t *testing.T) {
	body := `{
	  "Job": {
	    "ID": "web", "Update": null, "Spreads": [], "Dispatched": false, "Payload": null,
	    "TaskGroups": [{
	      "Name": "g", "Count": 0, "Networks": null, "Update": {"MaxParallel": 0, "Stagger": null},
	      "Tasks": [{"Name": "t", "Driver": "mock_driver", "Config": {"run_for": "1s", "anything": {"x": 1}},
	                 "User": "", "Templates": null, "Lifecycle": null}]
	    }]
	  },
	  "Submission": {"Source": "job \"web\" {}", "Format": "hcl2"},
	  "PolicyOverride": false, "SecretID": ""
	}`
	var got jobRegisterBody
	must.NoError(t, decodeString(t, body, &got))
	must.Eq(t, "web", *got.Job.ID)
	// A known field at its zero value is kept, not dropped: count 0 is a
	// setting (stop all instances), not an absent one.
	must.NotNil(t, got.Job.TaskGroups[0].Count)
	must.Eq(t, 0, *got.Job.TaskGroups[0].Count)
	must.Eq(t, map[string]any{"run_for": "1s", "anything": map[string]any{"x": float64(1)}}, got.Job.TaskGroups[0].Tasks[0].Config)
}

// A field we do not implement, given a value, is refused with its path,
// so the user learns the setting would be ignored.
func TestDecodeBody_UnknownFieldWithValue(t *testing.T) {
	var got jobRegisterBody
	err := decodeString(t, `{"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Consul": {"Namespace": "x"}}]}}`, &got)
	must.Error(t, err)
	code, msg := errorStatus(err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, msg, `unknown field "Job.TaskGroups[0].Consul"`)

	err = decodeString(t, `{"Job": {"ID": "web"}, "Submission": {"Source": "x"}, "NoSuchOption": true}`, &got)
	must.Error(t, err)
	must.StrContains(t, err.Error(), `unknown field "NoSuchOption"`)

	// Every unknown field is named at once, in a stable order, so the user
	// fixes them in one round trip (the official client's Canonicalize
	// fills several).
	err = decodeString(t, `{"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Consul": {"Namespace": "x"}, "Tasks": [{"Name": "t", "CSIPluginConfig": {"ID": "p"}}]}]}}`, &got)
	must.Error(t, err)
	must.StrContains(t, err.Error(), `unknown fields ["Job.TaskGroups[0].Consul" "Job.TaskGroups[0].Tasks[0].CSIPluginConfig"]`)
}

// Malformed JSON and wrong types are 400s that say what is wrong and where.
func TestDecodeBody_Malformed(t *testing.T) {
	cases := map[string]string{
		`{"Job": {"ID": "web",}}`:   "malformed JSON at byte",
		`{"Job": {"ID": "web"`:      "unexpected end of input",
		`{"Job": {"ID": "web"}} {}`: "unexpected data after the JSON value",
		`{"Job": {"ID": "web"}}}`:   "unexpected data after the JSON value",
		``:                          "empty request body",
		`{"Job": {"TaskGroups": [{"Count": "3"}]}}`: `Job.TaskGroups.Count" must be int`,
	}
	for body, want := range cases {
		var got jobRegisterBody
		err := decodeString(t, body, &got)
		must.Error(t, err, must.Sprintf("body %q", body))
		code, msg := errorStatus(err)
		must.Eq(t, http.StatusBadRequest, code, must.Sprintf("body %q", body))
		must.StrContains(t, msg, want, must.Sprintf("body %q", body))
	}
}

// A task config nested 40,000 deep (320 KB) once cost memory quadratic
// in its depth (issue 5); it must be a 400 naming the limit, found
// before anything is decoded.
func TestDecodeBody_DeepNestingRefused(t *testing.T) {
	const n = 40_000
	config := strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
	body := `{"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Config": ` + config + `}]}]}}`
	var got jobRegisterBody
	err := decodeString(t, body, &got)
	must.Error(t, err)
	code, msg := errorStatus(err)
	must.Eq(t, http.StatusBadRequest, code)
	must.StrContains(t, msg, "nesting deeper than 64 levels")

	// At the limit the body decodes: the wrapping levels (the body, Job,
	// TaskGroups and their elements, Tasks and theirs, Config) leave the
	// rest to the config.
	const wrapping = 7
	config = strings.Repeat(`{"a":`, nesting.MaxDepth-wrapping) + "1" + strings.Repeat("}", nesting.MaxDepth-wrapping)
	body = `{"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Config": {"c": ` + config + `}}]}]}}`
	must.NoError(t, decodeString(t, body, &got))
	must.Eq(t, nesting.MaxDepth-wrapping+1, structs.ValueDepth(got.Job.TaskGroups[0].Tasks[0].Config, 100))
}
