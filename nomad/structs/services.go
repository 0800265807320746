package structs

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Service providers. Only ServiceProviderNomad is implemented (the servers
// keep the catalog); "consul" is refused by name.
const (
	ServiceProviderNomad  = "nomad"
	ServiceProviderConsul = "consul"
)

// Address modes of a service or check.
const (
	AddressModeAuto   = "auto"
	AddressModeHost   = "host"
	AddressModeDriver = "driver"
	AddressModeAlloc  = "alloc"
)

// OnUpdate values of a service or check: what its checks mean for a
// deployment.
const (
	OnUpdateRequireHealthy = "require_healthy"
	OnUpdateIgnoreWarn     = "ignore_warnings"
	OnUpdateIgnore         = "ignore"
)

// Check types implemented by the client's check runner.
const (
	ServiceCheckHTTP   = "http"
	ServiceCheckTCP    = "tcp"
	ServiceCheckScript = "script"
)

// Initial statuses of a check, before its first result.
const (
	CheckStatusPassing  = "passing"
	CheckStatusWarning  = "warning"
	CheckStatusCritical = "critical"
)

// MinCheckInterval and MinCheckTimeout are the shortest a check may run
// every and wait for, as upstream.
const (
	MinCheckInterval = time.Second
	MinCheckTimeout  = time.Second
)

// Service is a `service` block of a group or task: the name under which
// each allocation's address and port are registered in the catalog, and
// the checks that judge the instance. Field names are upstream's.
type Service struct {
	// Name may hold ${...} references (NOMAD_JOB_NAME, ...) that the
	// client interpolates before registering.
	Name       string
	Tags       []string
	CanaryTags []string
	// PortLabel is a label of the group's network ports, or a number.
	PortLabel   string
	AddressMode string
	Address     string
	Checks      []*ServiceCheck
	Meta        map[string]string
	CanaryMeta  map[string]string
	// TaskName is, for a group service, the task script checks run in.
	TaskName string
	OnUpdate string
	Provider string
}

// ServiceCheck is a `check` block of a service.
type ServiceCheck struct {
	Name                   string
	Type                   string
	Command                string
	Args                   []string
	Path                   string
	Protocol               string
	PortLabel              string
	AddressMode            string
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
	// TaskName is the task a script check runs in.
	TaskName string
}

// CheckRestart restarts a task, through its restart policy, once a check
// has failed Limit times in a row; failures within Grace of the task's
// start do not count.
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// Copy returns a deep copy.
func (s *Service) Copy() *Service {
	if s == nil {
		return nil
	}
	n := *s
	n.Tags = slices.Clone(s.Tags)
	n.CanaryTags = slices.Clone(s.CanaryTags)
	n.Meta = maps.Clone(s.Meta)
	n.CanaryMeta = maps.Clone(s.CanaryMeta)
	if s.Checks != nil {
		n.Checks = make([]*ServiceCheck, len(s.Checks))
		for i, c := range s.Checks {
			n.Checks[i] = c.Copy()
		}
	}
	return &n
}

// Copy returns a deep copy.
func (c *ServiceCheck) Copy() *ServiceCheck {
	if c == nil {
		return nil
	}
	n := *c
	n.Args = slices.Clone(c.Args)
	if c.Header != nil {
		n.Header = make(map[string][]string, len(c.Header))
		for k, v := range c.Header {
			n.Header[k] = slices.Clone(v)
		}
	}
	n.CheckRestart = copyPtr(c.CheckRestart)
	return &n
}

func copyServices(in []*Service) []*Service {
	if in == nil {
		return nil
	}
	out := make([]*Service, len(in))
	for i, s := range in {
		out[i] = s.Copy()
	}
	return out
}

// canonicalize fills what a JSON job may leave empty, as the official
// client's Canonicalize does (provider "nomad" here: there is no Consul).
func (s *Service) canonicalize() {
	if s.AddressMode == "" {
		s.AddressMode = AddressModeAuto
	}
	if s.OnUpdate == "" {
		s.OnUpdate = OnUpdateRequireHealthy
	}
	if s.Provider == "" {
		s.Provider = ServiceProviderNomad
	}
	for _, c := range s.Checks {
		if c != nil && c.OnUpdate == "" {
			c.OnUpdate = s.OnUpdate
		}
	}
}

// serviceNameRe is what a service name must be once interpolated: a DNS
// label, as upstream (names with ${...} are checked by the client after
// interpolation).
var serviceNameRe = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9\-]{0,61}[a-z0-9])$`)

// serviceContext is what a service is validated against: its group's
// port labels and task names, and its own task for a task service.
type serviceContext struct {
	ports map[string]bool
	tasks map[string]bool
	// task is the task a task-level service belongs to ("" for a group's).
	task string
}

func (tg *TaskGroup) serviceContext(task string) serviceContext {
	ctx := serviceContext{ports: map[string]bool{}, tasks: map[string]bool{}, task: task}
	for _, n := range tg.Networks {
		if n == nil {
			continue
		}
		for _, p := range slices.Concat(n.ReservedPorts, n.DynamicPorts) {
			ctx.ports[p.Label] = true
		}
	}
	for _, t := range tg.Tasks {
		ctx.tasks[t.Name] = true
	}
	return ctx
}

// validateServices checks the group's services and its tasks', and that
// no two services of the group share a name and port (the catalog could
// not tell them apart).
func (tg *TaskGroup) validateServices() []string {
	var p problems
	type key struct{ name, port string }
	seen := map[key]bool{}
	check := func(prefix string, s *Service, ctx serviceContext) {
		if s == nil {
			p.add("%sservice block is empty", prefix)
			return
		}
		for _, msg := range s.validate(ctx) {
			p.add("%sService %q: %s", prefix, s.Name, msg)
		}
		k := key{s.Name, s.PortLabel}
		if seen[k] {
			p.add("%sService %q with port %q is defined twice in the group", prefix, s.Name, s.PortLabel)
		}
		seen[k] = true
	}
	for _, s := range tg.Services {
		check("", s, tg.serviceContext(""))
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			check("Task "+t.Name+": ", s, tg.serviceContext(t.Name))
		}
	}
	return p
}

func (s *Service) validate(ctx serviceContext) []string {
	var p problems
	switch {
	case s.Name == "":
		p.add("name is required")
	case !strings.Contains(s.Name, "${") && !serviceNameRe.MatchString(s.Name):
		p.add("name must be a DNS label: letters, digits and dashes, 1-63 characters, not starting or ending with a dash")
	}
	switch s.Provider {
	case "", ServiceProviderNomad:
	case ServiceProviderConsul:
		p.add("provider %q is not supported: there is no Consul integration; use provider = %q", s.Provider, ServiceProviderNomad)
	default:
		p.add("provider %q is unknown; use %q", s.Provider, ServiceProviderNomad)
	}
	p = append(p, validateAddressMode("address_mode", s.AddressMode)...)
	if s.Address != "" && s.AddressMode != "" && s.AddressMode != AddressModeAuto {
		p.add("address cannot be set with address_mode %q (only \"auto\")", s.AddressMode)
	}
	p = append(p, ctx.validatePort("port", s.PortLabel)...)
	p = append(p, validateOnUpdate("on_update", s.OnUpdate)...)
	if s.TaskName != "" {
		switch {
		case ctx.task != "":
			p.add("task cannot be set on a task's service: it belongs to task %q", ctx.task)
		case !ctx.tasks[s.TaskName]:
			p.add("task %q is not a task of the group", s.TaskName)
		}
	}
	names := map[string]bool{}
	for i, c := range s.Checks {
		if c == nil {
			p.add("check %d is empty", i+1)
			continue
		}
		label := c.Name
		if label == "" {
			label = strconv.Itoa(i + 1)
		} else if names[c.Name] {
			p.add("check %q is defined twice", c.Name)
		}
		names[c.Name] = true
		for _, msg := range c.validate(s, ctx) {
			p.add("check %s: %s", label, msg)
		}
	}
	return p
}

func validateAddressMode(field, mode string) []string {
	var p problems
	switch mode {
	case "", AddressModeAuto, AddressModeHost, AddressModeAlloc:
	case AddressModeDriver:
		p.add("%s %q is not supported: no driver here advertises a network of its own; use \"auto\", \"host\" or \"alloc\"", field, mode)
	default:
		p.add("%s must be one of \"auto\", \"host\", \"alloc\" (got %q)", field, mode)
	}
	return p
}

func validateOnUpdate(field, v string) []string {
	switch v {
	case "", OnUpdateRequireHealthy, OnUpdateIgnoreWarn, OnUpdateIgnore:
		return nil
	}
	return []string{field + ` must be one of "require_healthy", "ignore_warnings", "ignore" (got "` + v + `")`}
}

// validatePort accepts "", a label of the group's ports, or a port number.
func (ctx serviceContext) validatePort(field, label string) []string {
	if label == "" || ctx.ports[label] {
		return nil
	}
	if n, err := strconv.Atoi(label); err == nil {
		if n < 1 || n > 65535 {
			return []string{field + " " + label + " is out of range 1-65535"}
		}
		return nil
	}
	return []string{field + ` "` + label + `" is not a port label of the group's network block`}
}

func (c *ServiceCheck) validate(s *Service, ctx serviceContext) []string {
	var p problems
	switch c.Type {
	case ServiceCheckHTTP:
		if c.Path == "" {
			p.add("path is required for an http check")
		}
		switch c.Protocol {
		case "", "http", "https":
		default:
			p.add("protocol must be \"http\" or \"https\" (got %q)", c.Protocol)
		}
	case ServiceCheckTCP:
	case ServiceCheckScript:
		if c.Command == "" {
			p.add("command is required for a script check")
		}
		if ctx.task == "" && c.TaskName == "" && s.TaskName == "" {
			p.add("a script check of a group service needs task (on the check or the service) to run in")
		}
	case "":
		p.add("type is required: \"http\", \"tcp\" or \"script\"")
	case "grpc":
		p.add("type \"grpc\" is not supported; use \"http\", \"tcp\" or \"script\"")
	default:
		p.add("type must be one of \"http\", \"tcp\", \"script\" (got %q)", c.Type)
	}
	if c.Type != ServiceCheckHTTP {
		if c.Path != "" {
			p.add("path is only for http checks")
		}
		if c.Method != "" || len(c.Header) > 0 || c.Protocol != "" || c.TLSSkipVerify {
			p.add("method, header, protocol and tls_skip_verify are only for http checks")
		}
	}
	if c.Type != ServiceCheckScript && (c.Command != "" || len(c.Args) > 0) {
		p.add("command and args are only for script checks")
	}
	if c.Type == ServiceCheckTCP || c.Type == ServiceCheckHTTP {
		if c.PortLabel == "" && s.PortLabel == "" {
			p.add("port is required (on the check or its service) for a %s check", c.Type)
		}
	}
	p = append(p, ctx.validatePort("port", c.PortLabel)...)
	if c.Expose {
		p.add("expose is not supported: it needs a Consul Connect sidecar")
	}
	if c.Interval < MinCheckInterval {
		p.add("interval (%s) must be at least %s", c.Interval, MinCheckInterval)
	}
	if c.Timeout < MinCheckTimeout {
		p.add("timeout (%s) must be at least %s", c.Timeout, MinCheckTimeout)
	}
	switch c.InitialStatus {
	case "", CheckStatusPassing, CheckStatusWarning, CheckStatusCritical:
	default:
		p.add("initial_status must be one of \"passing\", \"warning\", \"critical\" (got %q)", c.InitialStatus)
	}
	if c.SuccessBeforePassing < 0 {
		p.add("success_before_passing can't be negative")
	}
	if c.FailuresBeforeCritical < 0 {
		p.add("failures_before_critical can't be negative")
	}
	p = append(p, validateAddressMode("address_mode", c.AddressMode)...)
	p = append(p, validateOnUpdate("on_update", c.OnUpdate)...)
	if c.TaskName != "" {
		switch {
		case ctx.task != "":
			p.add("task cannot be set on a check of a task's service")
		case !ctx.tasks[c.TaskName]:
			p.add("task %q is not a task of the group", c.TaskName)
		}
	}
	if r := c.CheckRestart; r != nil {
		if r.Limit < 0 {
			p.add("check_restart limit can't be negative")
		}
		if r.Grace < 0 {
			p.add("check_restart grace can't be negative")
		}
	}
	return p
}
