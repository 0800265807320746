package agent

import (
	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// convertTemplates converts a task's `template` blocks; the servers fill
// the defaults and validate them.
func convertTemplates(ts []*api.Template) []*structs.Template {
	if ts == nil {
		return nil
	}
	out := make([]*structs.Template, 0, len(ts))
	for _, t := range ts {
		if t == nil {
			continue
		}
		s := &structs.Template{
			SourcePath: deref(t.SourcePath), DestPath: deref(t.DestPath), EmbeddedTmpl: deref(t.EmbeddedTmpl),
			ChangeMode: deref(t.ChangeMode), ChangeSignal: deref(t.ChangeSignal), Perms: deref(t.Perms),
			LeftDelim: deref(t.LeftDelim), RightDelim: deref(t.RightDelim),
			Envvars: deref(t.Envvars), ErrMissingKey: deref(t.ErrMissingKey),
			Splay: structs.DefaultTemplateSplay,
		}
		if t.Splay != nil {
			s.Splay = *t.Splay
		}
		if w := t.Wait; w != nil {
			s.Wait = &structs.TemplateWait{Min: deref(w.Min), Max: deref(w.Max)}
		}
		out = append(out, s)
	}
	return out
}
