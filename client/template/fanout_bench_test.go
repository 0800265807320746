package template_test

import (
	"context"
	"sync"
	"testing"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/client/template/templatetest"
)

// BenchmarkFanOut measures the re-render fan-out of 1,000 templates that
// read one shared variable: from the change until every template has
// rendered the new content (one op is one change), the cost a client
// with a thousand templated tasks pays when a shared variable changes.
func BenchmarkFanOut(b *testing.B) {
	const n = 1000
	src := templatetest.New()
	src.PutVar("nomad/jobs/shared", map[string]string{"v": "0"})
	text := `{{ with nomadVar "nomad/jobs/shared" }}{{ .v }}{{ end }}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rendered := make(chan struct{}, n)
	var start sync.WaitGroup
	start.Add(n)
	for range n {
		go func() {
			in := template.Input{Name: "t", Text: text, LeftDelim: "{{", RightDelim: "}}", Source: src}
			res, err := template.Render(ctx, in)
			start.Done()
			for err == nil {
				if err = template.Watch(ctx, src, res.Deps); err != nil {
					return
				}
				res, err = template.Render(ctx, in)
				rendered <- struct{}{}
			}
		}()
	}
	start.Wait()
	b.ResetTimer()
	for i := range b.N {
		src.PutVar("nomad/jobs/shared", map[string]string{"v": string(rune('a' + i%26))})
		for range n {
			<-rendered
		}
	}
	b.StopTimer()
	cancel()
}
