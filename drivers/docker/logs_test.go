package docker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// frame is one multiplexed log frame of stream (1 stdout, 2 stderr).
func frame(stream byte, s string) []byte {
	b := make([]byte, 8, 8+len(s))
	b[0] = stream
	binary.BigEndian.PutUint32(b[4:], uint32(len(s)))
	return append(b, s...)
}

// podmanStreamError is what Podman 4 writes into a log stream it already
// answered 200 to, when the container exits as the stream opens.
const podmanStreamError = `{"cause":"no such process","message":"failed to obtain logs for Container 'abc': read /proc/6151/cgroup: no such process","response":500}` + "\n"

func TestDemux_EngineErrorInTheStreamIsAnErrorNotOutput(t *testing.T) {
	var out, errb bytes.Buffer
	wrote, err := demux(strings.NewReader(podmanStreamError), &out, &errb)
	must.False(t, wrote)
	must.ErrorContains(t, err, "docker API: 500: failed to obtain logs for Container 'abc'")
	must.Eq(t, "", out.String()+errb.String())

	// After frames: what was written stays, the error still says so.
	in := append(frame(1, "a\n"), frame(2, "b\n")...)
	in = append(in, "garbage that is not json"...)
	wrote, err = demux(bytes.NewReader(in), &out, &errb)
	must.True(t, wrote)
	must.ErrorContains(t, err, `not a frame: "garbage that is not json"`)
	must.Eq(t, "a\n", out.String())
	must.Eq(t, "b\n", errb.String())
}

// TestDriver_FailedLogStreamIsOpenedAgain checks that a log stream the
// engine fails before it sent anything is opened again from the same
// point, and one that failed after some lines resumes after them: the
// task's output lands once, and the engine's error never lands in it.
func TestDriver_FailedLogStreamIsOpenedAgain(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var sinces []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/logs") {
			http.Error(w, "not this", http.StatusNotFound)
			return
		}
		n := calls.Add(1)
		mu.Lock()
		sinces = append(sinces, r.URL.Query().Get("since"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
		switch n {
		case 1:
			_, _ = w.Write([]byte(podmanStreamError))
		case 2:
			_, _ = w.Write(frame(1, "one\n"))
			_, _ = w.Write([]byte(podmanStreamError))
		default:
			_, _ = w.Write(frame(1, "two\n"))
		}
	}))
	t.Cleanup(srv.Close)

	d, err := New(drivers.Options{Config: map[string]any{"endpoint": "tcp://" + srv.Listener.Addr().String()}})
	must.NoError(t, err)
	clk := clocktest.NewManual(time.Unix(1_700_000_000, 0))
	d.clock = clk
	cfg := newTaskConfig(t, sh("true"))
	h := d.newHandle(cfg, taskState{ContainerID: "abc"}, clk.Now())
	start := time.Unix(1_600_000_000, 5)
	d.follow(h, cfg, start)
	for want := int32(1); want <= 2; want++ {
		wait.Poll(t, testTimeout, fmt.Sprintf("log stream %d to fail and the retry to wait", want), func() (bool, string) {
			return calls.Load() == want && clk.Pending() == 1, fmt.Sprintf("%d calls, %d timers", calls.Load(), clk.Pending())
		})
		clk.Advance(retryWait)
	}
	select {
	case <-h.logsDone:
	case <-time.After(testTimeout):
		t.Fatalf("log stream not done after %d calls", calls.Load())
	}
	b, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	must.Eq(t, "one\ntwo\n", string(b))
	mu.Lock()
	defer mu.Unlock()
	must.Eq(t, 3, len(sinces))
	must.Eq(t, "1600000000.000000005", sinces[0])
	must.Eq(t, sinces[0], sinces[1])
	must.NotEq(t, sinces[0], sinces[2])
}
