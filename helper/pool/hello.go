package pool

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// helloTimeout bounds a node's hello: its write and the server's answer.
const helloTimeout = 10 * time.Second

// ErrSessionRefused is a node session (RPCNodeSession, RPCNodeKeepalive)
// that the server refused; the error names its reason.
var ErrSessionRefused = fmt.Errorf("server refused the node session")

// NodeHello proves the node to the server at the start of a node session
// (RPCNodeSession or RPCNodeKeepalive) and reads its answer.
func NodeHello(conn net.Conn, hello structs.NodeSessionHello) error {
	_ = conn.SetDeadline(time.Now().Add(helloTimeout))
	defer conn.SetDeadline(time.Time{})
	if err := codec.NewEncoder(conn, structs.MsgpackHandle).Encode(&hello); err != nil {
		return fmt.Errorf("%w: node hello: %w", ErrTransport, err)
	}
	var ack structs.NodeSessionAck
	if err := codec.NewDecoder(conn, structs.MsgpackHandle).Decode(&ack); err != nil {
		return fmt.Errorf("%w: node hello: %w", ErrTransport, err)
	}
	if ack.Error != "" {
		return fmt.Errorf("%w: %s", ErrSessionRefused, ack.Error)
	}
	return nil
}
