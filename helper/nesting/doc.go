// Package nesting bounds how deeply untrusted input may nest before a
// recursive parser or decoder sees it.
//
// HCL's parser and encoding/json recurse once per level of nesting, and
// what they build on the way (paths, diagnostics) can grow with the depth
// at every level: an input of a few hundred kilobytes can overflow the
// stack or use memory quadratic in its depth. The scans here are
// iterative and linear, so they run first and refuse such input with an
// error that names the limit.
package nesting

// MaxDepth is the deepest nesting accepted in job files, agent
// configuration and JSON request bodies, counted from the top of the
// document (each block, brace, bracket, parenthesis, template
// interpolation and unary or conditional operator is one level).
//
// Real job files nest a dozen levels at most; 64 leaves room for deep
// driver configs while keeping every accepted value well inside what the
// raft log's msgpack decoder accepts (structs.MaxNestingDepth is the same
// number, checked by a test), so a job the API accepts can always be
// applied and planned.
const MaxDepth = 64
