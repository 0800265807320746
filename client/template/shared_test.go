package template_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/client/template/templatetest"
)

// TestShared_OneWatchPerRead checks that the watches of many templates on
// one variable share one blocking query, so that a task with fifty
// templates on a variable costs the servers one watch, and that a
// template that stops watching does not end the query for the others.
func TestShared_OneWatchPerRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := templatetest.New()
		src.PutVar("nomad/jobs/app", map[string]string{"v": "1"})
		shared := template.Shared(src)
		res, err := template.Render(context.Background(), input(shared, `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }}`))
		must.NoError(t, err)
		before := src.Reads()

		const n = 50
		done := make(chan error, n)
		leaver, leave := context.WithCancel(context.Background())
		go func() { done <- template.Watch(leaver, shared, res.Deps) }()
		for range n - 1 {
			go func() { done <- template.Watch(context.Background(), shared, res.Deps) }()
		}
		synctest.Wait()
		must.Eq(t, 1, src.Reads()-before, must.Sprint("one blocking query for every watch"))
		leave()
		must.ErrorIs(t, <-done, context.Canceled)

		src.PutVar("nomad/jobs/app", map[string]string{"v": "2"})
		for range n - 1 {
			must.NoError(t, <-done)
		}
		must.Eq(t, 1, src.Reads()-before)
	})
}
