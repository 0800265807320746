package structs

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType is the first byte of every raft log entry: which request the
// rest of the entry holds. Values are persisted: append, never renumber.
type MessageType uint8

// Raft message types.
const (
	NodeRegisterRequestType MessageType = iota
	NodeDeregisterRequestType
	NodeUpdateStatusRequestType
	JobRegisterRequestType
	JobDeregisterRequestType
	EvalUpdateRequestType
	EvalDeleteRequestType
	AllocUpdateRequestType
	AllocClientUpdateRequestType
	ApplyPlanResultsRequestType
	JobBatchDeregisterRequestType
	AllocUpdateDesiredTransitionRequestType
	NodeBatchDeregisterRequestType
	ACLPolicyUpsertRequestType
	ACLPolicyDeleteRequestType
	ACLTokenUpsertRequestType
	ACLTokenDeleteRequestType
	ACLTokenBootstrapRequestType
	NodeUpdateDrainRequestType
	NodeUpdateEligibilityRequestType
	NodePurgeRequestType
	NamespaceUpsertRequestType
	NamespaceDeleteRequestType
	JobStabilityRequestType
	ScalingEventRegisterRequestType
	NodePoolUpsertRequestType
	NodePoolDeleteRequestType
	DeploymentStatusUpdateRequestType
	DeploymentPromoteRequestType
	DeploymentAllocHealthRequestType
	SiteOutageUpdateRequestType
	NodeBatchUpdateStatusRequestType
	DeploymentDeleteRequestType
	OneTimeTokenUpsertRequestType
	OneTimeTokenDeleteRequestType
	SchedulerConfigRequestType
	VarApplyStateRequestType
	RootKeyMetaUpsertRequestType
	ServiceRegistrationUpsertRequestType
	ServiceRegistrationDeleteByIDRequestType
	AutopilotConfigRequestType
	NodeEventsEmitRequestType
	RootKeyMetaDeleteRequestType
	ServerIdentitySetRequestType
	TLSCAUpsertRequestType
)

func (t MessageType) String() string {
	names := [...]string{"NodeRegister", "NodeDeregister", "NodeUpdateStatus", "JobRegister",
		"JobDeregister", "EvalUpdate", "EvalDelete", "AllocUpdate", "AllocClientUpdate",
		"ApplyPlanResults", "JobBatchDeregister", "AllocUpdateDesiredTransition",
		"NodeBatchDeregister", "ACLPolicyUpsert", "ACLPolicyDelete", "ACLTokenUpsert",
		"ACLTokenDelete", "ACLTokenBootstrap", "NodeUpdateDrain", "NodeUpdateEligibility", "NodePurge",
		"NamespaceUpsert", "NamespaceDelete", "JobStability", "ScalingEventRegister",
		"NodePoolUpsert", "NodePoolDelete",
		"DeploymentStatusUpdate", "DeploymentPromote", "DeploymentAllocHealth", "SiteOutageUpdate",
		"NodeBatchUpdateStatus", "DeploymentDelete", "OneTimeTokenUpsert", "OneTimeTokenDelete", "SchedulerConfig",
		"VarApplyState", "RootKeyMetaUpsert",
		"ServiceRegistrationUpsert", "ServiceRegistrationDeleteByID", "AutopilotConfig",
		"NodeEventsEmit", "RootKeyMetaDelete", "ServerIdentitySet", "TLSCAUpsert"}
	if int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// MsgpackHandle is the codec configuration for RPC and the raft log.
// Free-form maps (task config) decode to map[string]any with string keys.
var MsgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}()

// Encode serialises a raft entry: the type byte then the msgpack body.
func Encode(t MessageType, msg any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(uint8(t))
	enc := encoders.Get().(*codec.Encoder)
	enc.Reset(&buf)
	err := enc.Encode(msg)
	enc.Reset(io.Discard)
	encoders.Put(enc)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", t, err)
	}
	return buf.Bytes(), nil
}

// Decode deserialises a msgpack body into out. What it decodes shares no
// memory with buf: byte slices and strings are copied.
func Decode(buf []byte, out any) error {
	dec := decoders.Get().(*codec.Decoder)
	dec.ResetBytes(buf)
	err := dec.Decode(out)
	dec.ResetBytes([]byte{})
	decoders.Put(dec)
	return err
}

// encoders and decoders are reused across calls: a codec's encoder or
// decoder is a few KB that every raft entry and forwarded call would
// otherwise allocate and the collector scan. One reset to a new buffer
// clears all a previous use left in it.
var (
	encoders = sync.Pool{New: func() any { return codec.NewEncoder(io.Discard, MsgpackHandle) }}
	decoders = sync.Pool{New: func() any { return codec.NewDecoderBytes([]byte{}, MsgpackHandle) }}
)
