package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TLSCAList lists the cluster's TLS CAs without their keys, the active
// one first (`nomad operator tls ca list`); needs operator read.
func (op *Operator) TLSCAList(args *structs.TLSCAListRequest, reply *structs.TLSCAListResponse) error {
	if done, err := op.srv.forwardQuery("Operator.TLSCAList", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorRead); err != nil {
		return err
	}
	return op.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		cas, err := st.TLSCAs(ws)
		if err != nil {
			return 0, err
		}
		reply.CAs = make([]*structs.TLSCAStub, 0, len(cas))
		for _, ca := range cas {
			reply.CAs = append(reply.CAs, ca.Stub())
		}
		return st.Index(state.TableTLSCAs)
	})
}

// TLSCARotate makes a new active CA (`nomad operator tls ca rotate`);
// the old one stays trusted until the certificates it signed expire, and
// every agent renews onto the new one. Needs operator write, and tls.auto
// on the leader.
func (op *Operator) TLSCARotate(args *structs.TLSCARotateRequest, reply *structs.TLSCARotateResponse) error {
	if done, err := op.srv.forward("Operator.TLSCARotate", args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	if !op.srv.autoTLSOn() {
		return fmt.Errorf("%w: tls.auto is not enabled on this cluster's servers", structs.ErrInvalidRequest)
	}
	ca, index, err := op.srv.rotateTLSCA()
	if err != nil {
		return err
	}
	reply.CA, reply.Index = ca.Stub(), index
	return nil
}
