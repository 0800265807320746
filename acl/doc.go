// Package acl owns the ACL policy language and the checks made against it:
// Parse turns a policy's HCL rules into a Policy, and NewACL merges the
// policies a token holds into an ACL that endpoints ask "may this caller
// do X?", variables capabilities on a path included
// (AllowVariableOperation). It imports nothing of ours; the server
// resolves tokens to policies and calls it.
package acl
