package api

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

// Service providers. Only ServiceProviderNomad is implemented: the
// servers keep the catalog. ServiceProviderConsul is named so that it can
// be refused by name.
const (
	ServiceProviderNomad  = "nomad"
	ServiceProviderConsul = "consul"
)

// Address modes of a service or check, as upstream's.
const (
	AddressModeAuto   = "auto"
	AddressModeHost   = "host"
	AddressModeDriver = "driver"
	AddressModeAlloc  = "alloc"
)

// OnUpdate values of a service or check: what a failing check means for a
// deployment.
const (
	OnUpdateRequireHealthy = "require_healthy"
	OnUpdateIgnoreWarn     = "ignore_warnings"
	OnUpdateIgnore         = "ignore"
)

// Check types.
const (
	ServiceCheckHTTP   = "http"
	ServiceCheckTCP    = "tcp"
	ServiceCheckScript = "script"
)

// Service is a `service` block of a group or a task: a name under which the
// allocation's address and port are registered in the catalog, with the
// checks that say whether the instance is healthy. The field names and
// JSON shape are upstream's.
type Service struct {
	Name       string
	Tags       []string
	CanaryTags []string
	// PortLabel is `port`: a label of the group's network block, or a
	// port number.
	PortLabel   string
	AddressMode string
	Address     string
	Checks      []ServiceCheck
	// CheckRestart is a default for the checks' own check_restart,
	// merged into each by Canonicalize, as upstream.
	CheckRestart *CheckRestart `json:",omitempty"`
	Meta         map[string]string
	CanaryMeta   map[string]string
	// TaskName is `task`: on a group service, the task whose environment
	// script checks run in.
	TaskName string
	OnUpdate string
	Provider string
}

// ServiceCheck is a `check` block of a service.
type ServiceCheck struct {
	Name      string
	Type      string
	Command   string
	Args      []string
	Path      string
	Protocol  string
	PortLabel string
	// AddressMode is the check's own address mode (default: the
	// service's).
	AddressMode            string `json:",omitempty"`
	Method                 string
	Header                 map[string][]string
	Interval               time.Duration
	Timeout                time.Duration
	InitialStatus          string
	TLSSkipVerify          bool
	Expose                 bool
	SuccessBeforePassing   int
	FailuresBeforeCritical int
	OnUpdate               string
	CheckRestart           *CheckRestart
	// TaskName is `task`: for a script check of a group service, the
	// task it runs in.
	TaskName string
}

// CheckRestart is a check's `check_restart` block: restart the task
// through its restart policy once the check has failed Limit times in a
// row, not counting failures within Grace of the task starting.
type CheckRestart struct {
	Limit          int
	Grace          *time.Duration
	IgnoreWarnings bool
}

// Canonicalize fills a service's defaults as upstream's client does, except
// that the provider defaults to "nomad": there is no Consul integration.
// task is nil for a group service.
func (s *Service) Canonicalize(t *Task, g *TaskGroup, job *Job) {
	if s.Name == "" {
		s.Name = defaultServiceName(t, g, job)
	}
	if s.AddressMode == "" {
		s.AddressMode = AddressModeAuto
	}
	if s.OnUpdate == "" {
		s.OnUpdate = OnUpdateRequireHealthy
	}
	if s.Provider == "" {
		s.Provider = ServiceProviderNomad
	}
	for i := range s.Checks {
		c := &s.Checks[i]
		if c.OnUpdate == "" {
			c.OnUpdate = s.OnUpdate
		}
		c.CheckRestart = s.CheckRestart.merged(c.CheckRestart)
	}
}

// defaultServiceName is upstream's: job-group for a group service,
// job-group-task for a task's.
func defaultServiceName(t *Task, g *TaskGroup, job *Job) string {
	jobName, groupName := "", ""
	if job != nil && job.Name != nil {
		jobName = *job.Name
	}
	if g != nil && g.Name != nil {
		groupName = *g.Name
	}
	if t == nil {
		return fmt.Sprintf("%s-%s", jobName, groupName)
	}
	return fmt.Sprintf("%s-%s-%s", jobName, groupName, t.Name)
}

// merged layers over's fields on top of c (the service-level default);
// either may be nil.
func (c *CheckRestart) merged(over *CheckRestart) *CheckRestart {
	if c == nil {
		return over.clone()
	}
	out := c.clone()
	if over == nil {
		return out
	}
	if over.Limit > 0 {
		out.Limit = over.Limit
	}
	if over.Grace != nil {
		out.Grace = new(*over.Grace)
	}
	if over.IgnoreWarnings {
		out.IgnoreWarnings = true
	}
	return out
}

func (c *CheckRestart) clone() *CheckRestart {
	if c == nil {
		return nil
	}
	out := *c
	if c.Grace != nil {
		out.Grace = new(*c.Grace)
	}
	return &out
}

// Copy returns a deep copy.
func (s *Service) Copy() *Service {
	if s == nil {
		return nil
	}
	out := *s
	out.Tags = slices.Clone(s.Tags)
	out.CanaryTags = slices.Clone(s.CanaryTags)
	out.Meta = maps.Clone(s.Meta)
	out.CanaryMeta = maps.Clone(s.CanaryMeta)
	out.CheckRestart = s.CheckRestart.clone()
	if s.Checks != nil {
		out.Checks = make([]ServiceCheck, len(s.Checks))
		for i, c := range s.Checks {
			c.Args = slices.Clone(c.Args)
			if c.Header != nil {
				h := make(map[string][]string, len(c.Header))
				for k, v := range c.Header {
					h[k] = slices.Clone(v)
				}
				c.Header = h
			}
			c.CheckRestart = c.CheckRestart.clone()
			out.Checks[i] = c
		}
	}
	return &out
}

// Statuses of a ServiceRegistration (ours; see structs).
const (
	ServiceRegistrationStatusActive  = "active"
	ServiceRegistrationStatusUnknown = "unknown"
)

// ServiceRegistration is one instance of a service in the catalog, as
// upstream's; Status is ours: "unknown" while the instance's allocation
// is unknown (its node cut off), "active" otherwise.
type ServiceRegistration struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	Status      string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

// ServiceRegistrationListStub is one namespace's services.
type ServiceRegistrationListStub struct {
	Namespace string
	Services  []*ServiceRegistrationStub
}

// ServiceRegistrationStub is a service's name and its instances' tags.
type ServiceRegistrationStub struct {
	ServiceName string
	Tags        []string
}

// Services is the service catalog endpoint.
type Services struct {
	client *Client
}

// Services returns the service catalog endpoint.
func (c *Client) Services() *Services { return &Services{client: c} }

// List returns the services of the query's namespace ("*" for all).
func (s *Services) List(q *QueryOptions) ([]*ServiceRegistrationListStub, *QueryMeta, error) {
	var out []*ServiceRegistrationListStub
	qm, err := s.client.query("/v1/services", &out, q)
	return out, qm, err
}

// Get returns a service's instances. q.Params may carry filter, choose
// and include_unknown.
func (s *Services) Get(serviceName string, q *QueryOptions) ([]*ServiceRegistration, *QueryMeta, error) {
	var out []*ServiceRegistration
	qm, err := s.client.query("/v1/service/"+pathID(serviceName), &out, q)
	return out, qm, err
}

// Delete removes one instance.
func (s *Services) Delete(serviceName, id string, w *WriteOptions) (*WriteMeta, error) {
	return s.client.write(http.MethodDelete, "/v1/service/"+pathID(serviceName)+"/"+pathID(id), nil, nil, w)
}
