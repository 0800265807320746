package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/ui"
)

func serve(t *testing.T, method, path string) *http.Response {
	t.Helper()
	mux := http.NewServeMux()
	ui.Register(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	must.NoError(t, err)
	return string(b)
}

// / sends a browser to the UI, as upstream's agent does.
func TestUI_RootRedirects(t *testing.T) {
	r := serve(t, http.MethodGet, "/")
	must.Eq(t, http.StatusTemporaryRedirect, r.StatusCode)
	must.Eq(t, "/ui/", r.Header.Get("Location"))
}

// Every page path gets the app's index, so a link to a job or a reload on
// a node's page works; the assets come with their own types.
func TestUI_PagesAndAssets(t *testing.T) {
	for _, p := range []string{"/ui/", "/ui/fleet", "/ui/jobs", "/ui/jobs/web", "/ui/clients/0b1c", "/ui/allocations/abc"} {
		r := serve(t, http.MethodGet, p)
		must.Eq(t, http.StatusOK, r.StatusCode, must.Sprint(p))
		must.StrContains(t, r.Header.Get("Content-Type"), "text/html", must.Sprint(p))
		must.StrContains(t, body(t, r), `<script type="module" src="/ui/app.js">`, must.Sprint(p))
	}
	for p, typ := range map[string]string{"/ui/app.js": "javascript", "/ui/style.css": "text/css", "/ui/pages.js": "javascript", "/ui/fleet.js": "javascript"} {
		r := serve(t, http.MethodGet, p)
		must.Eq(t, http.StatusOK, r.StatusCode, must.Sprint(p))
		must.StrContains(t, r.Header.Get("Content-Type"), typ, must.Sprint(p))
	}
}

// Every UI answer forbids inline and foreign scripts, requests to other
// hosts and framing by other sites, so the UI cannot be turned against
// the agent that serves it.
func TestUI_SecurityHeaders(t *testing.T) {
	for _, p := range []string{"/ui/", "/ui/jobs/x", "/ui/app.js"} {
		r := serve(t, http.MethodGet, p)
		csp := r.Header.Get("Content-Security-Policy")
		must.StrContains(t, csp, "script-src 'self'", must.Sprint(p))
		must.StrContains(t, csp, "connect-src 'self'", must.Sprint(p))
		must.StrContains(t, csp, "frame-ancestors 'none'", must.Sprint(p))
		must.False(t, strings.Contains(csp, "unsafe-inline"), must.Sprint(p))
		must.False(t, strings.Contains(csp, "unsafe-eval"), must.Sprint(p))
		must.Eq(t, "nosniff", r.Header.Get("X-Content-Type-Options"), must.Sprint(p))
		must.Eq(t, "DENY", r.Header.Get("X-Frame-Options"), must.Sprint(p))
	}
}

// The UI is read-only from the server's side: a POST to it is refused.
func TestUI_OnlyGet(t *testing.T) {
	r := serve(t, http.MethodPost, "/ui/jobs")
	must.Eq(t, http.StatusMethodNotAllowed, r.StatusCode)
}

// The assets load nothing from another host, run no inline code and never
// parse API text as HTML: what the CSP promises, the code keeps. Every
// request goes through api.js, where the one function that sends
// anything but GET (send, behind a confirmation in actions.js) lives, so
// no other file can change state unnoticed.
func TestUI_AssetsStaySafe(t *testing.T) {
	entries, err := os.ReadDir("assets")
	must.NoError(t, err)
	must.SliceNotEmpty(t, entries)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("assets", e.Name()))
		must.NoError(t, err)
		src := string(b)
		bads := []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function", " style=", "<script>", " on" + "click="}
		if e.Name() != "api.js" {
			bads = append(bads, "fetch(", "XMLHttpRequest", "method")
		}
		for _, bad := range bads {
			must.False(t, strings.Contains(src, bad), must.Sprintf("%s contains %q", e.Name(), bad))
		}
	}
}
