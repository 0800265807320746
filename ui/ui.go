package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is sent with every UI response. Scripts and styles
// come only from the agent itself (no inline code, no eval), requests go
// only back to it, and no other site may frame the UI: a page that cannot
// run foreign code cannot be made to act with the operator's token.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Prefix is where the UI is served.
const Prefix = "/ui/"

// Register adds the UI's routes to mux: /ui/ and everything under it, and
// a redirect from / to /ui/ as upstream has.
func Register(mux *http.ServeMux) {
	mux.Handle("GET /{$}", http.RedirectHandler(Prefix, http.StatusTemporaryRedirect))
	mux.Handle("GET "+Prefix, Handler())
	mux.Handle("GET /ui", http.RedirectHandler(Prefix, http.StatusMovedPermanently))
}

// Handler serves the UI's files under /ui/. A path that names no file is
// one of the UI's pages (/ui/jobs/web, /ui/clients/...) and gets
// index.html, whose script renders the page from the path, so links and
// reloads work without a fragment in the URL.
func Handler() http.Handler {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		name := strings.TrimPrefix(path.Clean(r.URL.Path), strings.TrimSuffix(Prefix, "/"))
		name = strings.TrimPrefix(name, "/")
		if name == "" || !isFile(root, name) {
			serveIndex(w, r, root)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	// The assets change with the binary, which keeps no version in their
	// names: revalidate rather than run an old script against a new API.
	h.Set("Cache-Control", "no-cache")
}

func isFile(root fs.FS, name string) bool {
	st, err := fs.Stat(root, name)
	return err == nil && !st.IsDir()
}

func serveIndex(w http.ResponseWriter, r *http.Request, root fs.FS) {
	body, err := fs.ReadFile(root, "index.html")
	if err != nil {
		http.Error(w, "UI index missing from the binary", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}
