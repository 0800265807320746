package agent

import (
	"slices"

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
		if cs := t.ChangeScript; cs != nil {
			s.ChangeScript = &structs.ChangeScript{Command: deref(cs.Command), Args: slices.Clone(cs.Args),
				Timeout: deref(cs.Timeout), FailOnError: deref(cs.FailOnError)}
		}
		if t.Uid != nil {
			s.Uid = new(*t.Uid)
		}
		if t.Gid != nil {
			s.Gid = new(*t.Gid)
		}
		out = append(out, s)
	}
	return out
}
