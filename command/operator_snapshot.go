package command

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/helper/snapshot"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// OperatorSnapshotCommand is `nomad operator snapshot`.
type OperatorSnapshotCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSnapshotCommand) Synopsis() string {
	return "Saves and inspects snapshots of Nomad server state"
}

// Help implements cli.Command.
func (c *OperatorSnapshotCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator snapshot <subcommand> [options]

  Save the servers' state (jobs, allocations, nodes, evaluations,
  deployments, ACLs, variables...) to a file at one point in time, look
  inside such a file, and restore the cluster from one.

  If ACLs are enabled, these commands require a management token.

  Save a snapshot:

      $ nomad operator snapshot save backup.snap

  Inspect a snapshot:

      $ nomad operator snapshot inspect backup.snap

  Restore a snapshot:

      $ nomad operator snapshot restore backup.snap

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorSnapshotCommand) Run(args []string) int {
	return c.runParent("operator snapshot", args)
}

// OperatorSnapshotSaveCommand is `nomad operator snapshot save`.
type OperatorSnapshotSaveCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSnapshotSaveCommand) Synopsis() string {
	return "Saves snapshot of Nomad server state"
}

// Help implements cli.Command.
func (c *OperatorSnapshotSaveCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator snapshot save [options] <file>

  Write a snapshot of the servers' state, taken at one raft index, to
  <file>. The file is written beside it under <file>.tmp, checked, and
  only then renamed into place.

  If ACLs are enabled, this command requires a management token.

  Save the leader's state to backup.snap:

      $ nomad operator snapshot save backup.snap

  Save the state of whichever server the agent reaches, leader or not
  (when the cluster has no leader):

      $ nomad operator snapshot save -stale backup.snap

` + generalOptions() + `

Snapshot Save Options:

  -stale=[true|false]
    By default the leader takes the snapshot. With -stale any server
    does, from its own state, which may lag the leader's.
`)
}

// Run implements cli.Command.
func (c *OperatorSnapshotSaveCommand) Run(args []string) int {
	const name = "operator snapshot save"
	flags := c.FlagSet(name)
	var stale bool
	flags.BoolVar(&stale, "stale", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <filename>", name)
	}
	client, code, ok := c.clientFor(name, 0, 0)
	if !ok {
		return code
	}
	path := flags.Arg(0)
	if !c.save(client, path, stale) {
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("State file written to %s", path))
	return exitOK
}

// save writes the servers' snapshot to path by way of path.tmp, which it
// verifies before the rename; a failure leaves no file at path. It prints
// what failed, with upstream's wording.
func (c *OperatorSnapshotSaveCommand) save(client *api.Client, path string, stale bool) bool {
	fail := func(what string, err error) bool {
		c.Ui.Error(fmt.Sprintf("%s: %v", what, err))
		return false
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fail("Failed to create snapshot file", err)
	}
	defer os.Remove(tmp)
	defer f.Close()
	body, err := client.Operator().Snapshot(&api.QueryOptions{AllowStale: stale})
	if err != nil {
		return fail("Failed to get snapshot file", err)
	}
	defer body.Close()
	if _, err := io.Copy(f, body); err != nil {
		return fail("Failed to write snapshot file", err)
	}
	if err := f.Sync(); err != nil {
		return fail("Failed to write snapshot file", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail("Failed to read snapshot file", err)
	}
	a, err := snapshot.Read(f, "")
	if err != nil {
		return fail("Error verifying snapshot file", err)
	}
	_ = a.Close()
	if err := os.Rename(tmp, path); err != nil {
		return fail("Failed to rename snapshot file", err)
	}
	return true
}

// OperatorSnapshotRestoreCommand is `nomad operator snapshot restore`.
type OperatorSnapshotRestoreCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSnapshotRestoreCommand) Synopsis() string {
	return "Restore snapshot of Nomad server state"
}

// Help implements cli.Command.
func (c *OperatorSnapshotRestoreCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator snapshot restore [options] <file>

  Replace the cluster's state with the snapshot in <file>. The leader
  checks the whole file before it changes anything, restores it through
  raft (the other servers follow), and then rebuilds what it keeps in
  memory (evaluations queued and blocked, heartbeat timers, periodic jobs,
  deployments watched) from the restored state.

  A restore rewinds the cluster: what was written after the snapshot was
  taken is gone. It is meant for disaster recovery, and is not built to
  survive a server failing while it runs.

  If ACLs are enabled, this command requires a management token.

      $ nomad operator snapshot restore backup.snap

` + generalOptions())
}

// Run implements cli.Command.
func (c *OperatorSnapshotRestoreCommand) Run(args []string) int {
	const name = "operator snapshot restore"
	flags := c.FlagSet(name)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <filename>", name)
	}
	f, err := os.Open(flags.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening snapshot file: %v", err))
		return exitError
	}
	defer f.Close()
	client, code, ok := c.clientFor(name, 0, 0)
	if !ok {
		return code
	}
	if _, err := client.Operator().SnapshotRestore(f, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to get restore snapshot: %v", err))
		return exitError
	}
	c.Ui.Output("Snapshot Restored")
	return exitOK
}

// OperatorSnapshotInspectCommand is `nomad operator snapshot inspect`.
type OperatorSnapshotInspectCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSnapshotInspectCommand) Synopsis() string {
	return "Displays information about a Nomad snapshot file"
}

// Help implements cli.Command.
func (c *OperatorSnapshotInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator snapshot inspect [options] <file>

  Check a snapshot file on disk (every checksum) and show its metadata:
  the raft index and term it was taken at, its ID, the size of its state
  and the version of its format. Nothing is sent to the servers.

      $ nomad operator snapshot inspect backup.snap

Snapshot Inspect Options:

  -json
    Print the metadata as JSON.
`)
}

// Run implements cli.Command.
func (c *OperatorSnapshotInspectCommand) Run(args []string) int {
	const name = "operator snapshot inspect"
	flags := c.FlagSet(name)
	var asJSON bool
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <filename>", name)
	}
	f, err := os.Open(flags.Arg(0))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error opening snapshot file: %v", err))
		return exitError
	}
	defer f.Close()
	info, err := inspectSnapshot(f)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error verifying snapshot: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(info)
	}
	lines := []string{
		fmt.Sprintf("ID|%s", info.ID),
		fmt.Sprintf("Size|%d", info.Size),
		fmt.Sprintf("Index|%d", info.Index),
		fmt.Sprintf("Term|%d", info.Term),
		fmt.Sprintf("Version|%d", info.Version),
	}
	for _, d := range info.Details {
		lines = append(lines, d.Name+"|"+d.Value)
	}
	// Upstream's layout: aligned columns, no "=".
	c.Ui.Output(formatList(lines))
	return exitOK
}

// snapshotInfo is what inspect shows of a snapshot file.
type snapshotInfo struct {
	ID      string
	Size    int64
	Index   uint64
	Term    uint64
	Version int
	// Details are rows about the state itself, after the metadata; none
	// for ours, whose rows are upstream's (upstreamSnapshotDetails).
	Details []snapshotDetail `json:",omitempty"`
}

// snapshotDetail is one row of inspect's output.
type snapshotDetail struct {
	Name  string
	Value string
}

// inspectSnapshot verifies the archive read from r and describes it.
func inspectSnapshot(r io.Reader) (*snapshotInfo, error) {
	a, err := snapshot.Read(r, "")
	if err != nil {
		return nil, err
	}
	defer a.Close()
	info := &snapshotInfo{ID: a.Meta.ID, Size: a.Meta.Size, Index: a.Meta.Index, Term: a.Meta.Term, Version: int(a.Meta.Version)}
	br := bufio.NewReader(a.State)
	format, err := snapshot.Sniff(br)
	if err != nil {
		return nil, err
	}
	switch format {
	case snapshot.FormatOurs:
	case snapshot.FormatUpstream:
		if info.Details, err = upstreamSnapshotDetails(br); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("the snapshot's state is not a Nomad state stream")
	}
	return info, nil
}

// upstreamSnapshotDetails describes the state.bin of an upstream Nomad
// snapshot: what a restore carries over, by kind with its count, and each
// kind it does not, with its count and why (upstreamrpc.SnapshotState).
// A state.bin that cannot be read fails inspect as it would fail restore.
func upstreamSnapshotDetails(r io.Reader) ([]snapshotDetail, error) {
	st, err := upstreamrpc.ReadSnapshotState(r)
	if err != nil {
		return nil, err
	}
	var carried []string
	for _, c := range st.Carried() {
		if c.Count > 0 {
			carried = append(carried, fmt.Sprintf("%s %d", c.Kind, c.Count))
		}
	}
	out := []snapshotDetail{
		{Name: "Format", Value: "upstream Nomad"},
		{Name: "Carried", Value: strings.Join(carried, ", ")},
	}
	for _, nc := range st.NotCarried {
		out = append(out, snapshotDetail{Name: "Not carried", Value: fmt.Sprintf("%s %d: %s", nc.Kind, nc.Count, strings.ReplaceAll(nc.Reason, "|", "/"))})
	}
	return out, nil
}
