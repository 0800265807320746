package command

import (
	"archive/tar"
	"compress/gzip"
	"html/template"
	"os"
	"path/filepath"
)

// debugIndexHTML lists the bundle's files as links, for a browser opened
// on the unpacked directory, and what is not in it.
var debugIndexHTML = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>Nomad debug bundle</title></head>
<body>
<h1>Nomad debug bundle</h1>
{{if .Interrupted}}<p>The capture was interrupted before the end of its duration.</p>
{{end}}<h2>Files</h2>
<ul>
{{range .Files}}<li><a href="{{.}}">{{.}}</a></li>
{{end}}</ul>
<h2>Not captured</h2>
<ul>
{{range .NotCaptured}}<li>{{.Path}}: {{.Reason}}</li>
{{else}}<li>nothing</li>
{{end}}</ul>
</body>
</html>
`))

// writeDebugIndexHTML writes index.html for ix into dir.
func writeDebugIndexHTML(dir string, ix debugIndex) error {
	tmp := filepath.Join(dir, "index.html.partial")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = debugIndexHTML.Execute(f, ix)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "index.html"))
}

// writeTarGz archives parent, which holds the bundle's directory name
// alone, to path, entries named from name down.
// It writes path.partial and renames it, so a failure leaves no archive.
func writeTarGz(path, parent, name string) (err error) {
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	// parent holds the bundle's directory alone: its entries are named
	// from name down.
	err = tw.AddFS(os.DirFS(parent))
	if err != nil {
		return err
	}
	if err = tw.Close(); err != nil {
		return err
	}
	if err = gz.Close(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
