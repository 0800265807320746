package netns

import (
	"net"
	"time"
)

// DialTCP connects to addr from inside the namespace pinned at path (the
// host's own namespace when path is empty). The socket belongs to the
// namespace it was made in, so the connection, once made, is used from
// any thread.
func DialTCP(path, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	dial := func() (err error) {
		c, err = net.DialTimeout("tcp", addr, timeout)
		return err
	}
	if path == "" {
		return c, dial()
	}
	if err := Do(path, dial); err != nil {
		return nil, err
	}
	return c, nil
}
