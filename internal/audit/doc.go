// Package audit holds tests that keep the documentation honest about the
// code as a whole, rather than about one package.
//
// TestStatusChecksAudit walks every non-test Go file of the module with go/ast
// and go/types and compares the functions that check an allocation's or a
// node's status (Allocation.TerminalStatus and its friends, comparisons with
// the terminal and unknown status constants) with the audit tables of
// website/content/docs/status-model.md, so the published list of "who treats
// unknown how" cannot go stale. It follows wrappers (a short bool predicate
// of the module that makes a check, such as scheduler.isLive, is a check for
// its callers), and TestNoRawStatusComparisons refuses status fields compared
// with string literals, which the audit could not see.
//
// TestDocCitationsNameSections checks that code comments citing
// website/content/docs/concepts/disconnected-clients.md name sections
// (headings) the page really has.
//
// TestImportDirection checks the layering between the module's packages
// (the model imports nothing of ours, the scheduler only the model, the
// client and drivers never the server) against a table of rules, each
// with its reason.
//
// The TestDocs_ checks hold the pages to the code where a machine can
// tell: the parser's error examples are what the parser prints, package
// comments exist and name only files that exist, and the README names
// every built-in driver.
//
// The package has no code of its own: it lives
// apart so that no production package's tests depend on the layout of the
// whole repository, and `go test ./internal/audit` is the one command that
// checks the audit.
package audit
