package nomad

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Variables is the Variables.* RPC endpoint. Items cross it in the clear
// (the RPC connection is the servers' own, TLS when configured); the
// leader encrypts them with the active root key before they go through
// raft, and a server decrypts them when it answers a read.
type Variables struct {
	srv *Server
}

// varCap is variables capability c on path in namespace ns.
func varCap(ns, path, c string) permission {
	return permission{
		allow: func(a *acl.ACL) bool { return a.AllowVariableOperation(ns, path, c) },
		what:  fmt.Sprintf("variables %s on %q in namespace %q", c, path, ns),
	}
}

// opCapability is what a write needs: destroy to delete, write otherwise.
func opCapability(op structs.VarOp) string {
	if op == structs.VarOpDelete || op == structs.VarOpDeleteCAS {
		return acl.VariablesCapabilityDestroy
	}
	return acl.VariablesCapabilityWrite
}

// Apply writes one variable: set, check-and-set, delete (plain or
// check-and-set), or acquire or release its lock. A lost check-and-set or
// lock is answered with Result conflict and the variable it lost to (its
// items only when the caller may read them), not an error.
func (v *Variables) Apply(args *structs.VariablesApplyRequest, reply *structs.VariablesApplyResponse) error {
	if done, err := v.srv.forward("Variables.Apply", args, reply); done {
		return err
	}
	in := args.Var
	if in == nil {
		return fmt.Errorf("%w: variable is missing", structs.ErrMissingField)
	}
	in = in.Copy()
	if in.Namespace == "" {
		in.Namespace = args.WriteRequest.Namespace
	}
	if in.Namespace == "" {
		in.Namespace = structs.DefaultNamespace
	}
	switch args.Op {
	case structs.VarOpSet, structs.VarOpCAS, structs.VarOpDelete, structs.VarOpDeleteCAS,
		structs.VarOpLockAcquire, structs.VarOpLockRelease:
	default:
		return fmt.Errorf("%w: unknown variable operation %q", structs.ErrInvalidRequest, args.Op)
	}
	a, _, err := v.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if err := check(a, args.AuthToken, varCap(in.Namespace, in.Path, opCapability(args.Op))); err != nil {
		return err
	}
	if err := in.Validate(args.Op); err != nil {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
	}
	if size := in.Items.Size(); size > structs.MaxVariableSize {
		return fmt.Errorf("%w (this one is %d bytes)", structs.ErrVariableTooLarge, size)
	}
	if err := v.srv.State().NamespaceExists(in.Namespace); err != nil {
		return err
	}
	switch args.Op {
	case structs.VarOpLockAcquire:
		lock := &structs.VariableLock{ID: structs.GenerateUUID(), TTL: structs.DefaultLockTTL, LockDelay: structs.DefaultLockDelay}
		if in.Lock != nil {
			if in.Lock.TTL != 0 {
				lock.TTL = in.Lock.TTL
			}
			lock.LockDelay = in.Lock.LockDelay
		}
		in.Lock = lock
	case structs.VarOpLockRelease:
		if in.LockID() == "" {
			return fmt.Errorf("%w: lock ID: a release names the lock it releases", structs.ErrMissingField)
		}
	}
	out, err := v.srv.applyVar(args.Op, in, false, 0)
	if err != nil {
		return err
	}
	reply.Op, reply.Input, reply.Result, reply.Index = args.Op, nil, out.Result, out.index
	if out.Result != structs.VarOpResultOk {
		var redacted bool
		reply.Conflict, redacted, err = v.conflictFor(a, args.AuthToken, out.Conflict)
		if redacted {
			reply.Result = structs.VarOpResultRedacted
		}
		return err
	}
	switch args.Op {
	case structs.VarOpLockAcquire:
		v.srv.varLocks.start(out.Written)
	case structs.VarOpLockRelease:
		v.srv.varLocks.stop(in.Namespace, in.Path)
	}
	if out.Written != nil {
		reply.Output, err = v.srv.encrypter.decryptVar(out.Written)
	}
	return err
}

// conflictFor is the variable a write lost to, as the caller may see it:
// its items only with read on it.
func (v *Variables) conflictFor(a *acl.ACL, secret string, c *structs.VariableEncrypted) (*structs.VariableDecrypted, bool, error) {
	if c == nil {
		return nil, false, nil
	}
	if check(a, secret, varCap(c.Namespace, c.Path, acl.VariablesCapabilityRead)) != nil {
		m := c.VariableMetadata
		m.Lock = withoutLockID(c.Lock)
		return &structs.VariableDecrypted{VariableMetadata: m}, true, nil
	}
	d, err := v.srv.encrypter.decryptVar(c)
	if d != nil {
		d.Lock = withoutLockID(d.Lock)
	}
	return d, false, err
}

// varApplied is what the FSM did with a write, and its raft index.
type varApplied struct {
	*structs.VarApplyStateResponse
	index uint64
}

// applyVar encrypts in with the active key (when it has items) and
// writes it through raft. expired marks the leader's release of a lock
// whose TTL ran out, which starts its lock delay at delayUntil.
func (s *Server) applyVar(op structs.VarOp, in *structs.VariableDecrypted, expired bool, delayUntil int64) (*varApplied, error) {
	enc := &structs.VariableEncrypted{VariableMetadata: in.VariableMetadata}
	enc.Lock = in.Lock.Copy()
	if len(in.Items) > 0 {
		active, err := s.State().ActiveRootKeyMeta(nil)
		if err != nil {
			return nil, err
		}
		if active == nil {
			return nil, fmt.Errorf("%w: the keyring has no active root key yet", structs.ErrUnknownRootKey)
		}
		data, err := s.encrypter.encryptItems(active.KeyID, in.Namespace, in.Path, in.Items)
		if err != nil {
			return nil, err
		}
		enc.VariableData = structs.VariableData{Data: data, KeyID: active.KeyID}
	}
	req := &structs.VarApplyStateRequest{Op: op, Var: enc, Now: s.clock.Now().UnixNano(), Expired: expired, LockDelayUntil: delayUntil}
	raw, index, err := s.raftApply(structs.VarApplyStateRequestType, req)
	if err != nil {
		return nil, err
	}
	resp, ok := raw.(*structs.VarApplyStateResponse)
	if !ok {
		return nil, fmt.Errorf("variable write: unexpected FSM answer %T", raw)
	}
	if resp.Result == structs.VarOpResultError {
		return nil, structs.RPCError(resp.Err)
	}
	return &varApplied{VarApplyStateResponse: resp, index: index}, nil
}

// Read reads one variable, decrypted; Data is nil when the path holds
// nothing. Needs read on the path.
func (v *Variables) Read(args *structs.VariablesReadRequest, reply *structs.VariablesReadResponse) error {
	if done, err := v.srv.forwardQuery("Variables.Read", &args.QueryOptions, args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	if err := v.srv.authorize(args.AuthToken, varCap(ns, args.Path, acl.VariablesCapabilityRead)); err != nil {
		return err
	}
	return v.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Data = nil
		enc, err := st.VarGet(ws, ns, args.Path)
		if err != nil {
			return 0, err
		}
		if enc == nil {
			return st.Index(state.TableVariables)
		}
		if reply.Data, err = v.srv.encrypter.decryptVar(enc); err != nil {
			return 0, err
		}
		reply.Data.Lock = withoutLockID(reply.Data.Lock)
		return enc.ModifyIndex, nil
	})
}

// List lists the metadata of the variables under the request's prefix in
// its namespace ("*": every namespace), those the caller may list only.
func (v *Variables) List(args *structs.VariablesListRequest, reply *structs.VariablesListResponse) error {
	if done, err := v.srv.forwardQuery("Variables.List", &args.QueryOptions, args, reply); done {
		return err
	}
	a, _, err := v.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	ns := args.RequestNamespace()
	return v.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		vars, err := st.Variables(ws, ns, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Data = []*structs.VariableMetadata{}
		for _, enc := range vars {
			if a.AllowVariableOperation(enc.Namespace, enc.Path, acl.VariablesCapabilityList) {
				m := enc.VariableMetadata
				m.Lock = withoutLockID(enc.Lock)
				reply.Data = append(reply.Data, &m)
			}
		}
		return st.Index(state.TableVariables)
	})
}

// RenewLock renews the lock the caller holds: the leader restarts the
// lock's TTL; nothing goes through raft. A lock the caller does not hold
// (released, expired, someone else's) is ErrLockConflict.
func (v *Variables) RenewLock(args *structs.VariablesRenewLockRequest, reply *structs.VariablesRenewLockResponse) error {
	if done, err := v.srv.forward("Variables.RenewLock", args, reply); done {
		return err
	}
	ns := args.WriteRequest.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	if err := v.srv.authorize(args.AuthToken, varCap(ns, args.Path, acl.VariablesCapabilityWrite)); err != nil {
		return err
	}
	if args.LockID == "" {
		return fmt.Errorf("%w: lock ID: a renewal names the lock it renews", structs.ErrMissingField)
	}
	enc, err := v.srv.varLocks.renew(ns, args.Path, args.LockID)
	if err != nil {
		return err
	}
	m := enc.VariableMetadata
	m.Lock = enc.Lock.Copy()
	reply.VarMeta = &m
	reply.Index = enc.ModifyIndex
	return nil
}

// errNotLeaderForLocks refuses a renewal on a server that stopped leading
// between the forward and the timer.
var errNotLeaderForLocks = errors.New("lock timers run on the leader only")

// withoutLockID is a lock as anyone but its holder sees it: its ID is
// the holder's credential, handed out only by the acquire that made it.
func withoutLockID(l *structs.VariableLock) *structs.VariableLock {
	c := l.Copy()
	if c != nil {
		c.ID = ""
	}
	return c
}
