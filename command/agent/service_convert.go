package agent

import (
	"maps"
	"slices"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// convertServices converts canonicalized wire services (the service-level
// check_restart already merged into each check by api's Canonicalize).
func convertServices(in []*api.Service) []*structs.Service {
	if in == nil {
		return nil
	}
	out := make([]*structs.Service, 0, len(in))
	for _, s := range in {
		if s == nil {
			out = append(out, nil)
			continue
		}
		n := &structs.Service{
			Name:        s.Name,
			Tags:        slices.Clone(s.Tags),
			CanaryTags:  slices.Clone(s.CanaryTags),
			PortLabel:   s.PortLabel,
			AddressMode: s.AddressMode,
			Address:     s.Address,
			Meta:        maps.Clone(s.Meta),
			CanaryMeta:  maps.Clone(s.CanaryMeta),
			TaskName:    s.TaskName,
			OnUpdate:    s.OnUpdate,
			Provider:    s.Provider,
		}
		for _, c := range s.Checks {
			n.Checks = append(n.Checks, convertCheck(c))
		}
		out = append(out, n)
	}
	return out
}

func convertCheck(c api.ServiceCheck) *structs.ServiceCheck {
	out := &structs.ServiceCheck{
		Name:                   c.Name,
		Type:                   c.Type,
		Command:                c.Command,
		Args:                   slices.Clone(c.Args),
		Path:                   c.Path,
		Protocol:               c.Protocol,
		PortLabel:              c.PortLabel,
		AddressMode:            c.AddressMode,
		Method:                 c.Method,
		Interval:               c.Interval,
		Timeout:                c.Timeout,
		InitialStatus:          c.InitialStatus,
		TLSSkipVerify:          c.TLSSkipVerify,
		Expose:                 c.Expose,
		SuccessBeforePassing:   c.SuccessBeforePassing,
		FailuresBeforeCritical: c.FailuresBeforeCritical,
		OnUpdate:               c.OnUpdate,
		TaskName:               c.TaskName,
	}
	if c.Header != nil {
		out.Header = make(map[string][]string, len(c.Header))
		for k, v := range c.Header {
			out.Header[k] = slices.Clone(v)
		}
	}
	if r := c.CheckRestart; r != nil {
		out.CheckRestart = &structs.CheckRestart{
			Limit:          r.Limit,
			Grace:          deref(r.Grace),
			IgnoreWarnings: r.IgnoreWarnings,
		}
	}
	return out
}
