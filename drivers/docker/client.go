package docker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNoSuchContainer is returned for a container the engine does not know.
var ErrNoSuchContainer = errors.New("no such container")

// ErrNoSuchImage is returned for an image the engine does not have.
var ErrNoSuchImage = errors.New("no such image")

// apiError is a non-2xx answer of the engine.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("docker API: %d: %s", e.Status, e.Message) }

// client speaks the parts of the Docker Engine API the driver uses, over
// the engine's unix socket or TCP. It holds no state beyond the transport.
type client struct {
	http *http.Client
	base string // "http://docker" for unix sockets
}

// newClient parses an endpoint such as unix:///var/run/docker.sock or
// tcp://127.0.0.1:2375.
func newClient(endpoint string) (*client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}
	base := ""
	switch u.Scheme {
	case "unix":
		path := u.Path
		if path == "" {
			path = u.Opaque
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		base = "http://docker"
	case "tcp", "http":
		base = "http://" + u.Host
	default:
		return nil, fmt.Errorf("endpoint %q: want unix:// or tcp://", endpoint)
	}
	return &client{http: &http.Client{Transport: tr}, base: base}, nil
}

// do sends a request and returns the response for a 2xx status; other
// statuses become *apiError with the engine's message.
func (c *client) do(ctx context.Context, method, path string, q url.Values, body io.Reader, hdr http.Header) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m struct{ Message string }
	if json.Unmarshal(b, &m) != nil || m.Message == "" {
		m.Message = strings.TrimSpace(string(b))
	}
	return nil, &apiError{Status: resp.StatusCode, Message: m.Message}
}

// call sends in as JSON (when non-nil) and decodes the answer into out
// (when non-nil).
func (c *client) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	hdr := http.Header{}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
		hdr.Set("Content-Type", "application/json")
	}
	resp, err := c.do(ctx, method, path, q, body, hdr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == code
}

func (c *client) ping(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, "/_ping", nil, nil, nil)
}

// versionInfo is the engine's GET /version answer.
type versionInfo struct {
	Version       string
	APIVersion    string `json:"ApiVersion"`
	Os            string
	Arch          string
	KernelVersion string
	Components    []versionComponent
}

// versionComponent is one part of the engine ("Podman Engine", "Engine").
type versionComponent struct{ Name, Version string }

func (c *client) version(ctx context.Context) (versionInfo, error) {
	var v versionInfo
	err := c.call(ctx, http.MethodGet, "/version", nil, nil, &v)
	return v, err
}

// imageInfo is the part of GET /images/{name}/json the driver reads.
type imageInfo struct {
	ID string `json:"Id"`
}

func (c *client) inspectImage(ctx context.Context, name string) (imageInfo, error) {
	var info imageInfo
	err := c.call(ctx, http.MethodGet, "/images/"+url.PathEscape(name)+"/json", nil, nil, &info)
	if isStatus(err, http.StatusNotFound) {
		return info, fmt.Errorf("%w: %s", ErrNoSuchImage, name)
	}
	return info, err
}

func (c *client) removeImage(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodDelete, "/images/"+url.PathEscape(id), nil, nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// registryAuth is the `auth` block, sent as X-Registry-Auth.
type registryAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Email         string `json:"email,omitempty"`
	ServerAddress string `json:"serveraddress,omitempty"`
}

// pullProgress is one message of the image pull stream.
type pullProgress struct {
	Status         string
	ID             string `json:"id"`
	Error          string `json:"error"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
}

// pullImage pulls ref and calls onProgress for every message of the stream.
// The engine answers 200 before it knows whether the pull works, so the
// error, if any, arrives in the stream.
func (c *client) pullImage(ctx context.Context, ref string, auth *registryAuth, onProgress func(pullProgress)) error {
	repo, tag := splitRef(ref)
	q := url.Values{"fromImage": {repo}, "tag": {tag}}
	hdr := http.Header{}
	if auth != nil {
		b, _ := json.Marshal(auth)
		hdr.Set("X-Registry-Auth", base64.URLEncoding.EncodeToString(b))
	}
	resp, err := c.do(ctx, http.MethodPost, "/images/create", q, nil, hdr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var p pullProgress
		if err := dec.Decode(&p); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		if p.Error != "" {
			return errors.New(p.Error)
		}
		if onProgress != nil {
			onProgress(p)
		}
	}
}

// loadImage loads an image archive (`docker save` output).
func (c *client) loadImage(ctx context.Context, archive io.Reader) error {
	resp, err := c.do(ctx, http.MethodPost, "/images/load", url.Values{"quiet": {"1"}}, archive, http.Header{"Content-Type": {"application/x-tar"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// splitRef splits "repo:tag" (a registry port is not a tag) and defaults the
// tag to latest, as the engine would.
func splitRef(ref string) (repo, tag string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}

// createResult is POST /containers/create's answer.
type createResult struct {
	ID       string `json:"Id"`
	Warnings []string
}

func (c *client) createContainer(ctx context.Context, name string, spec *containerSpec) (string, error) {
	var res createResult
	err := c.call(ctx, http.MethodPost, "/containers/create", url.Values{"name": {name}}, spec, &res)
	return res.ID, err
}

func (c *client) startContainer(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
	if isStatus(err, http.StatusNotModified) {
		return nil
	}
	return c.notFound(err, id)
}

func (c *client) killContainer(ctx context.Context, id, signal string) error {
	err := c.call(ctx, http.MethodPost, "/containers/"+id+"/kill", url.Values{"signal": {signal}}, nil, nil)
	// 409: not running any more, which is what the caller wanted.
	if isStatus(err, http.StatusConflict) {
		return nil
	}
	return c.notFound(err, id)
}

func (c *client) removeContainer(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

func (c *client) notFound(err error, id string) error {
	if isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("%w: %s", ErrNoSuchContainer, id)
	}
	return err
}

// containerInfo is the part of GET /containers/{id}/json the driver reads.
type containerInfo struct {
	ID    string `json:"Id"`
	Name  string
	Image string
	State struct {
		Running    bool
		OOMKilled  bool
		Pid        int
		ExitCode   int
		Error      string
		StartedAt  time.Time
		FinishedAt time.Time
	}
	Config struct {
		Labels map[string]string
	}
	NetworkSettings struct {
		IPAddress string
	}
}

func (c *client) inspectContainer(ctx context.Context, id string) (containerInfo, error) {
	var info containerInfo
	err := c.call(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &info)
	return info, c.notFound(err, id)
}

// waitContainer blocks until the container is not running and returns its
// exit code.
func (c *client) waitContainer(ctx context.Context, id string) (int, error) {
	var res struct {
		StatusCode int
		Error      *struct{ Message string }
	}
	err := c.call(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {"not-running"}}, nil, &res)
	if err != nil {
		return 0, c.notFound(err, id)
	}
	if res.Error != nil && res.Error.Message != "" {
		return res.StatusCode, errors.New(res.Error.Message)
	}
	return res.StatusCode, nil
}

// listContainers returns the IDs of containers (running or not) carrying
// every label of labels.
func (c *client) listContainers(ctx context.Context, labels map[string]string) ([]containerInfo, error) {
	var f []string
	for k, v := range labels {
		f = append(f, k+"="+v)
	}
	filters, _ := json.Marshal(map[string][]string{"label": f})
	var out []struct {
		ID     string `json:"Id"`
		Names  []string
		State  string
		Labels map[string]string
	}
	if err := c.call(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(filters)}}, nil, &out); err != nil {
		return nil, err
	}
	res := make([]containerInfo, 0, len(out))
	for _, o := range out {
		var ci containerInfo
		ci.ID = o.ID
		if len(o.Names) > 0 {
			ci.Name = o.Names[0] // "/<name>", as inspect gives it
		}
		ci.State.Running = o.State == "running"
		ci.Config.Labels = o.Labels
		res = append(res, ci)
	}
	return res, nil
}

// followLogs streams the container's stdout and stderr from since into the
// writers until the container stops or ctx ends. Containers without a TTY
// send a multiplexed stream: 8-byte frame headers naming the stream. wrote
// says whether any frame reached a writer, so that a caller retrying a
// failed stream knows whether to resume from since or from what it has.
func (c *client) followLogs(ctx context.Context, id string, since time.Time, stdout, stderr io.Writer) (wrote bool, err error) {
	q := url.Values{"follow": {"1"}, "stdout": {"1"}, "stderr": {"1"}}
	if !since.IsZero() {
		q.Set("since", fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()))
	}
	resp, err := c.do(ctx, http.MethodGet, "/containers/"+id+"/logs", q, nil, nil)
	if err != nil {
		return false, c.notFound(err, id)
	}
	defer resp.Body.Close()
	// No buffer of our own: the transport's reader is enough for frame
	// headers, and a buffer per task is what a hundred tasks would pay.
	return demux(resp.Body, stdout, stderr)
}

// demux copies a multiplexed log stream into stdout and stderr. An engine
// that fails after it sent its 200 (Podman does, when the container exits
// as the stream opens) writes its JSON error into the stream instead of a
// frame; that is returned as an error, never written to the task's logs.
func demux(r io.Reader, stdout, stderr io.Writer) (wrote bool, err error) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				return wrote, nil
			}
			return wrote, err
		}
		if hdr[0] > 2 || hdr[1] != 0 || hdr[2] != 0 || hdr[3] != 0 {
			return wrote, streamError(hdr[:], r)
		}
		n := int64(binary.BigEndian.Uint32(hdr[4:]))
		w := stdout
		if hdr[0] == 2 {
			w = stderr
		}
		wrote = true
		if _, err := io.CopyN(w, r, n); err != nil {
			return wrote, err
		}
	}
}

// streamError reads what follows a log stream's bytes that are not a frame
// header (at most 64 KiB) as the engine's error.
func streamError(head []byte, r io.Reader) error {
	rest, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	b := append(append([]byte(nil), head...), rest...)
	var m struct {
		Message  string `json:"message"`
		Response int    `json:"response"`
	}
	if json.Unmarshal(b, &m) != nil || m.Message == "" {
		return fmt.Errorf("docker API: log stream: not a frame: %q", truncate(b, 200))
	}
	if m.Response == 0 {
		m.Response = http.StatusInternalServerError
	}
	return &apiError{Status: m.Response, Message: m.Message}
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
