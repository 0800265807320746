package agent

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeBody checks that no request body, however hostile, makes the
// strict decoder panic, and that every refusal is a client error (4xx):
// a body can never make the agent answer 500. Run with:
// go test -fuzz FuzzDecodeBody ./command/agent/
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Count": 2, "Tasks": [{"Name": "t", "Driver": "mock_driver", "Config": {"a": [1, {"b": null}]}}]}]}}`,
		`{"Job": {"ID": "x", "Update": null, "Spreads": []}, "SecretID": ""}`,
		`{"JobHCL": "job \"x\" {}", "Canonicalize": true}`,
		`{"Name": "fleet", "Meta": {"k": "v"}, "Capabilities": null}`,
		strings.Repeat("[", 100), `{"a": "\"[{"}`, `{"Job": {"TaskGroups": [{"Count": "3"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, out := range []any{&jobRegisterBody{}, &jobValidateBody{}, &namespaceBody{}} {
			r := httptest.NewRequest(http.MethodPut, "/v1/jobs", bytes.NewReader(body))
			if err := decodeBody(r, out); err != nil {
				if code, _ := errorStatus(err); code < 400 || code >= 500 {
					t.Fatalf("status %d for a bad body: %v", code, err)
				}
			}
		}
	})
}
