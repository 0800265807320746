package upstreamrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/yamux"
)

// ClientAPI is how the servers reach an upstream client: the /v1/client
// HTTP exchanges our servers send down a node's session (see
// pool.RPCNodeSession) are answered here by upstream's client RPCs over
// the session the upstream client opened, so the server and the HTTP API
// treat an upstream node as any other. Served: fs logs, ls, stat, cat and
// readat, allocation stats, exec, signal and restart, and node stats.
// Anything else (checks, gc, metadata) answers 501 naming the path.
type ClientAPI struct {
	sess  *yamux.Session
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

// newClientAPI serves the client API of the upstream client behind sess
// until it closes.
func newClientAPI(sess *yamux.Session) *ClientAPI {
	c := &ClientAPI{sess: sess, conns: make(chan net.Conn), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/client/fs/logs/{alloc}", c.logs)
	mux.HandleFunc("GET /v1/client/fs/cat/{alloc}", c.cat)
	mux.HandleFunc("GET /v1/client/fs/ls/{alloc}", c.list)
	mux.HandleFunc("GET /v1/client/fs/stat/{alloc}", c.stat)
	mux.HandleFunc("GET /v1/client/fs/readat/{alloc}", c.readAt)
	mux.HandleFunc("GET /v1/client/allocation/{alloc}/stats", c.allocStats)
	mux.HandleFunc("GET /v1/client/allocation/{alloc}/exec", c.exec)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		mux.HandleFunc(m+" /v1/client/allocation/{alloc}/signal", c.allocSignal)
		mux.HandleFunc(m+" /v1/client/allocation/{alloc}/restart", c.allocRestart)
	}
	mux.HandleFunc("GET /v1/client/stats", c.nodeStats)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("%s %s is not served for upstream Nomad clients", r.Method, r.URL.Path), http.StatusNotImplemented)
	})
	go func() { _ = http.Serve(c, mux) }()
	go func() {
		<-sess.CloseChan()
		c.Close()
	}()
	return c
}

// Open returns one end of a connection that carries one HTTP/1.1 exchange
// with the client API, as a stream of our node session does.
func (c *ClientAPI) Open() (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case c.conns <- b:
		return a, nil
	case <-c.done:
		return nil, net.ErrClosed
	}
}

// IsClosed says whether the upstream client's session has ended.
func (c *ClientAPI) IsClosed() bool { return c.sess.IsClosed() }

// Close ends the session and the API served over it.
func (c *ClientAPI) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.sess.Close()
}

// Accept, Addr: ClientAPI is the listener its HTTP server serves.
func (c *ClientAPI) Accept() (net.Conn, error) {
	select {
	case conn := <-c.conns:
		return conn, nil
	case <-c.done:
		return nil, net.ErrClosed
	}
}

// Addr names the upstream client's end of the session.
func (c *ClientAPI) Addr() net.Addr { return c.sess.RemoteAddr() }

// fsRequest is the arguments of upstream's FileSystem.* client RPCs.
type fsRequest struct {
	AllocID   string
	Path      string `codec:",omitempty"`
	Task      string `codec:",omitempty"`
	LogType   string `codec:",omitempty"`
	Origin    string `codec:",omitempty"`
	Offset    int64
	Limit     int64
	Follow    bool
	PlainText bool
	Region    string
	Namespace string
	AuthToken string
}

func newFSRequest(r *http.Request) (fsRequest, error) {
	q := r.URL.Query()
	req := fsRequest{
		AllocID:   r.PathValue("alloc"),
		Path:      q.Get("path"),
		Task:      q.Get("task"),
		LogType:   q.Get("type"),
		Origin:    q.Get("origin"),
		Namespace: q.Get("namespace"),
		Region:    q.Get("region"),
		AuthToken: r.Header.Get("X-Nomad-Token"),
	}
	if req.Origin == "" {
		req.Origin = "start"
	}
	var err error
	for _, b := range []struct {
		name string
		to   *bool
	}{{"follow", &req.Follow}, {"plain", &req.PlainText}} {
		if v := q.Get(b.name); v != "" {
			if *b.to, err = strconv.ParseBool(v); err != nil {
				return req, fmt.Errorf("query parameter %s: %w", b.name, err)
			}
		}
	}
	if v := q.Get("offset"); v != "" {
		if req.Offset, err = strconv.ParseInt(v, 10, 64); err != nil {
			return req, fmt.Errorf("query parameter offset: %w", err)
		}
	}
	return req, nil
}

// fileInfo is upstream's AllocFileInfo, with its ModTime in upstream's
// binary form decoded.
type fileInfo struct {
	Name        string
	IsDir       bool
	Size        int64
	FileMode    string
	ModTime     time.Time
	ContentType string `json:",omitempty"`
}

// rpcRequest and rpcResponse are the headers of a net/rpc call in
// msgpack, as upstream's servers write them (testdata/stats-request.msgpack).
type (
	rpcRequest struct {
		ServiceMethod string
		Seq           uint64
	}
	rpcResponse struct {
		ServiceMethod string
		Seq           uint64
		Error         string
	}
)

// call makes one unary client RPC on a new stream: the protocol byte, the
// request's header and body, then the reply's. Written out rather than
// through net/rpc's client, whose reading goroutine outlives the call.
// The client's error comes back as an rpc.ServerError, as net/rpc's.
func (c *ClientAPI) call(method string, args, reply any) error {
	st, err := c.sess.Open()
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Write([]byte{streamRPC}); err != nil {
		return err
	}
	enc := codec.NewEncoder(st, Handle)
	if err := enc.Encode(&rpcRequest{ServiceMethod: method}); err != nil {
		return err
	}
	if err := enc.Encode(args); err != nil {
		return err
	}
	dec := codec.NewDecoder(st, Handle)
	var h rpcResponse
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("reading the reply header: %w", err)
	}
	if h.Error != "" {
		return rpc.ServerError(h.Error)
	}
	return dec.Decode(reply)
}

func (c *ClientAPI) list(w http.ResponseWriter, r *http.Request) {
	req, err := newFSRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var reply struct{ Files []*fileInfo }
	if err := c.call("FileSystem.List", &req, &reply); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, reply.Files)
}

func (c *ClientAPI) stat(w http.ResponseWriter, r *http.Request) {
	req, err := newFSRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var reply struct{ Info *fileInfo }
	if err := c.call("FileSystem.Stat", &req, &reply); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, reply.Info)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (c *ClientAPI) logs(w http.ResponseWriter, r *http.Request) {
	req, err := newFSRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Path = ""
	c.stream(w, r, "FileSystem.Logs", req)
}

// cat is a file's content, whole, as plain bytes.
func (c *ClientAPI) cat(w http.ResponseWriter, r *http.Request) {
	req, err := newFSRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Origin, req.Offset, req.Follow, req.PlainText = "start", 0, false, true
	c.stream(w, r, "FileSystem.Stream", req)
}

// streamHeader opens a streaming client RPC.
type streamHeader struct{ Method string }

// streamAck is the client's answer to a streaming RPC's header and args.
type streamAck struct{ Error string }

// streamFrame is one message of a streaming RPC: an error, or a payload
// (a JSON frame of ours and upstream's HTTP API, or plain bytes when the
// request asked for PlainText).
type streamFrame struct {
	Error *struct {
		Message string
		Code    *int64
	}
	Payload []byte
}

// openStreaming opens a streaming client RPC: the protocol byte, a header
// naming the method, the request, then the client's acknowledgement. The
// decoder reads the frames that follow.
func (c *ClientAPI) openStreaming(method string, req any) (net.Conn, *codec.Decoder, error) {
	st, err := c.sess.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: opening a stream to the upstream client: %w", method, err)
	}
	enc := codec.NewEncoder(st, Handle)
	dec := codec.NewDecoder(st, Handle)
	_, err = st.Write([]byte{streamStreaming})
	if err == nil {
		err = enc.Encode(&streamHeader{Method: method})
	}
	if err == nil {
		err = enc.Encode(req)
	}
	var ack streamAck
	if err == nil {
		err = dec.Decode(&ack)
	}
	if err == nil && ack.Error != "" {
		err = errors.New(ack.Error)
	}
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("%s on the upstream client: %w", method, err)
	}
	return st, dec, nil
}

// stream runs a streaming client RPC and writes its payloads to w as they
// come, until the client ends it or the caller goes away.
func (c *ClientAPI) stream(w http.ResponseWriter, r *http.Request, method string, req fsRequest) {
	st, dec, err := c.openStreaming(method, &req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer st.Close()
	go func() {
		<-r.Context().Done()
		st.Close()
	}()
	if req.PlainText {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	flusher, _ := w.(http.Flusher)
	wrote := false
	for {
		var f streamFrame
		if err := dec.Decode(&f); err != nil {
			if !wrote && !errors.Is(err, io.EOF) {
				http.Error(w, fmt.Sprintf("%s on the upstream client: %v", method, err), http.StatusBadGateway)
			}
			return
		}
		if f.Error != nil {
			if !wrote {
				code := http.StatusInternalServerError
				if f.Error.Code != nil && *f.Error.Code >= 400 && *f.Error.Code < 600 {
					code = int(*f.Error.Code)
				}
				http.Error(w, f.Error.Message, code)
			}
			return
		}
		if _, err := w.Write(f.Payload); err != nil {
			return
		}
		wrote = true
		if flusher != nil {
			flusher.Flush()
		}
	}
}
