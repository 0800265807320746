package testutil_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil"
	"github.com/shoenig/test/must"
)

// Isolating a host fails what crosses its links the way a real partition
// does (Reset: connections closed and dials refused; Blackhole: bytes
// vanish and dials hang to their deadline), and healing restores new
// dials: the in-memory cluster's tests are only as true as these faults.
func TestMemNet_IsolateAndHeal(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		n := testutil.NewMemNet()
		defer n.Close()
		l, err := n.Listen("10.0.0.1:4647")
		must.NoError(t, err)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = io.Copy(c, c); c.Close() }()
			}
		}()
		d := n.Dialer("10.0.1.1")
		dial := func(timeout time.Duration) (io.ReadWriteCloser, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			return d.DialContext(ctx, "tcp", "10.0.0.1:4647")
		}
		echo := func(c io.ReadWriter) error {
			if _, err := c.Write([]byte("x")); err != nil {
				return err
			}
			_, err := io.ReadFull(c, make([]byte, 1))
			return err
		}

		c, err := dial(time.Second)
		must.NoError(t, err)
		must.NoError(t, echo(c))
		n.Isolate("10.0.1.1", testutil.Reset)
		must.Error(t, echo(c), must.Sprint("an open connection is closed"))
		_, err = dial(time.Second)
		must.ErrorIs(t, err, testutil.ErrPartitioned)

		n.Heal("10.0.1.1")
		c, err = dial(time.Second)
		must.NoError(t, err)
		n.Isolate("10.0.0.1", testutil.Blackhole)
		start := time.Now()
		_, err = dial(3 * time.Second)
		must.ErrorIs(t, err, testutil.ErrPartitioned)
		must.Eq(t, 3*time.Second, time.Since(start), must.Sprint("a blackholed dial hangs to its deadline"))
		_, err = c.Write([]byte("x"))
		must.NoError(t, err, must.Sprint("writes into a blackhole succeed and vanish"))

		n.Heal("10.0.0.1")
		_, err = c.Write([]byte("x"))
		must.Error(t, err, must.Sprint("a blackholed connection is gone after the heal"))
		c, err = dial(time.Second)
		must.NoError(t, err)
		must.NoError(t, echo(c))
		c.Close()
		l.Close()
	})
}
