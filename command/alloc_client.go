package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// allocTarget is the allocation a client command (logs, fs, restart,
// signal, exec) acts on, resolved from an ID or a unique prefix.
type allocTarget struct {
	client *api.Client
	alloc  *api.Allocation
}

// targetAlloc resolves prefix to one allocation.
func (m *Meta) targetAlloc(prefix string) (*allocTarget, bool) {
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, false
	}
	stub, ok := m.resolveAlloc(client, prefix, view{now: time.Now()})
	if !ok {
		return nil, false
	}
	return m.targetByID(client, stub.ID)
}

func (m *Meta) targetByID(client *api.Client, id string) (*allocTarget, bool) {
	alloc, _, err := client.Allocations().Info(id, nil)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error querying allocation: %v", err))
		return nil, false
	}
	return &allocTarget{client: client, alloc: alloc}, true
}

// targetJobAlloc resolves a job ID or prefix to the job's newest running
// allocation, for a client command's -job: upstream's picks one of the
// job's running allocations.
func (m *Meta) targetJobAlloc(prefix string) (*allocTarget, bool) {
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, false
	}
	client, job, ok := m.resolveJob(client, prefix)
	if !ok {
		return nil, false
	}
	stubs, _, err := client.Jobs().Allocations(job.ID, false, nil)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error querying the job's allocations: %v", err))
		return nil, false
	}
	var newest *api.AllocationListStub
	for _, a := range stubs {
		if a.ClientStatus == api.AllocClientStatusRunning && (newest == nil || a.CreateIndex > newest.CreateIndex) {
			newest = a
		}
	}
	if newest == nil {
		m.Ui.Error(fmt.Sprintf("Job %q has no running allocations", job.ID))
		return nil, false
	}
	return m.targetByID(client, newest.ID)
}

// tasks are the allocation's task names, sorted.
func (t *allocTarget) tasks() []string {
	names := make([]string, 0, len(t.alloc.TaskStates))
	for name := range t.alloc.TaskStates {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// pickTask returns the task named, or the allocation's only task when no
// name is given.
func (t *allocTarget) pickTask(name string) (string, error) {
	tasks := t.tasks()
	if name != "" {
		if len(tasks) > 0 && !slices.Contains(tasks, name) {
			return "", userErrorf("Could not find task named %q; the allocation has: %s", name, strings.Join(tasks, ", "))
		}
		return name, nil
	}
	if len(tasks) == 1 {
		return tasks[0], nil
	}
	return "", userErrorf("Allocation %q has %d tasks: name one of them (%s)", t.alloc.ID[:8], len(tasks), strings.Join(tasks, ", "))
}

// path is the /v1/client path of an operation on the allocation.
func (t *allocTarget) path(format string, query url.Values) string {
	p := fmt.Sprintf(format, url.PathEscape(t.alloc.ID))
	if len(query) > 0 {
		p += "?" + query.Encode()
	}
	return p
}

// do sends a /v1/client request and returns the response when it is a
// success; otherwise the error carries the agent's message.
func (t *allocTarget) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	resp, err := t.client.Raw(ctx, api.RawRequest{Method: method, Path: path, Body: rd})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, userErrorf("Unexpected response code: %d (%s)", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// decodeJSON decodes an agent's JSON answer.
func decodeJSON(r io.Reader, v any) error {
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("decoding the agent's answer: %w", err)
	}
	return nil
}
