package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

func (f *nomadFSM) applyACLPolicyUpsert(req *structs.ACLPolicyUpsertRequest, index uint64) error {
	return f.State().UpsertACLPolicies(index, req.Policies)
}

func (f *nomadFSM) applyACLPolicyDelete(req *structs.ACLPolicyDeleteRequest, index uint64) error {
	return f.State().DeleteACLPolicies(index, req.Names)
}

func (f *nomadFSM) applyACLTokenUpsert(req *structs.ACLTokenUpsertRequest, index uint64) error {
	return f.State().UpsertACLTokens(index, req.Tokens)
}

func (f *nomadFSM) applyACLTokenDelete(req *structs.ACLTokenDeleteRequest, index uint64) error {
	return f.State().DeleteACLTokens(index, req.AccessorIDs)
}

func (f *nomadFSM) applyACLTokenBootstrap(req *structs.ACLTokenBootstrapRequest, index uint64) error {
	return f.State().BootstrapACLTokens(index, req.Token)
}

func (f *nomadFSM) applyOneTimeTokenUpsert(req *structs.OneTimeTokenUpsertRequest, index uint64) error {
	return f.State().UpsertOneTimeToken(index, req.OneTimeToken, req.Expired)
}

func (f *nomadFSM) applyOneTimeTokenDelete(req *structs.OneTimeTokenDeleteRequest, index uint64) error {
	return f.State().DeleteOneTimeTokens(index, req.OneTimeSecretIDs)
}
