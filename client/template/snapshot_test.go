package template_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/client/template/templatetest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestSnapshot_FallbackAfterRoundTrip checks that the data a render read,
// persisted as JSON and loaded again, renders the same content while the
// source fails, which is what lets a client restarted while cut off
// render its templates; and that reads it never made still fail.
func TestSnapshot_FallbackAfterRoundTrip(t *testing.T) {
	src := templatetest.New()
	src.PutVar("nomad/jobs/app", map[string]string{"v": "1"})
	src.PutService("db", &structs.ServiceRegistration{ServiceName: "db", Address: "10.0.0.5", Port: 5432})
	text := `{{ with nomadVar "nomad/jobs/app" }}{{ .v }}{{ end }} {{ nomadVarExists "nomad/jobs/none" }} {{ range nomadService "db" }}{{ .Port }}{{ end }}`
	res, err := template.Render(context.Background(), input(src, text))
	must.NoError(t, err)
	snap := template.NewSnapshot()
	snap.Record(res)
	b, err := snap.MarshalJSON()
	must.NoError(t, err)

	loaded := template.NewSnapshot()
	must.NoError(t, loaded.UnmarshalJSON(b))
	src.SetDown(errors.New("no servers"))
	again, err := template.Render(context.Background(), input(template.WithFallback(src, loaded), text))
	must.NoError(t, err)
	must.Eq(t, string(res.Content), string(again.Content))
	must.Eq(t, "1 false 5432", string(again.Content))

	_, err = template.Render(context.Background(), input(template.WithFallback(src, loaded), `{{ nomadVarExists "other" }}`))
	must.ErrorContains(t, err, "no servers")
}
