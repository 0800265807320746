package command

import (
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func serverMembers(m Meta) cli.Command  { return &ServerMembersCommand{Meta: m} }
func serverJoin(m Meta) cli.Command     { return &ServerJoinCommand{Meta: m} }
func forceLeave(m Meta) cli.Command     { return &ServerForceLeaveCommand{Meta: m} }
func raftListPeers(m Meta) cli.Command  { return &OperatorRaftListCommand{Meta: m} }
func raftRemovePeer(m Meta) cli.Command { return &OperatorRaftRemoveCommand{Meta: m} }

// `server members` prints upstream's columns, with the dev agent's one
// server alive and leading; -verbose (and its older spelling -detailed)
// adds the gossip protocol and the tags. Scripts parse these columns.
func TestServerMembers(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	_, port, err := net.SplitHostPort(a.Server().RPCAddr().String())
	must.NoError(t, err)
	name := a.Config().NodeName + ".global"

	code, out, errOut := run(t, a, serverMembers)
	must.Eq(t, 0, code, must.Sprint(errOut))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.SliceLen(t, 2, lines)
	must.Eq(t, []string{"Name", "Address", "Port", "Status", "Leader", "Raft Version", "Build", "Datacenter", "Region"}, columns(lines[0]))
	must.Eq(t, []string{name, "127.0.0.1", port, "alive", "true", "3", agent.Version, "dc1", "global"}, columns(lines[1]))

	for _, flag := range []string{"-verbose", "-detailed"} {
		code, out, errOut = run(t, a, serverMembers, flag)
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines = strings.Split(strings.TrimSpace(out), "\n")
		must.Eq(t, []string{"Name", "Address", "Port", "Status", "Leader", "Protocol", "Raft Version", "Build", "Datacenter", "Region", "Tags"}, columns(lines[0]), must.Sprint(flag))
		row := columns(lines[1])
		must.Eq(t, "true", row[4])
		must.StrContains(t, row[10], "id="+a.Server().ID(), must.Sprint(flag))
		must.StrContains(t, row[10], "role=nomad", must.Sprint(flag))
	}

	code, _, errOut = run(t, a, serverMembers, "extra")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "This command takes no arguments")
}

// The Leader column marks, in each region, the member whose advertised RPC
// address (the rpc_addr tag when the gossip address differs) is that
// region's leader; members sort by region, datacenter and name.
func TestFormatMembers_Leader(t *testing.T) {
	member := func(name, addr, rpcAddr, dc, region string) *api.AgentMember {
		tags := map[string]string{"region": region, "dc": dc, "port": "4647", "raft_vsn": "3", "build": "0.1.0"}
		if rpcAddr != "" {
			tags["rpc_addr"] = rpcAddr
		}
		return &api.AgentMember{Name: name, Addr: addr, Port: 4648, Status: "alive", Tags: tags}
	}
	resp := &api.ServerMembers{ServerRegion: "global", Members: []*api.AgentMember{
		member("s3.global", "10.0.0.3", "", "dc2", "global"),
		member("s2.global", "192.168.1.2", "10.0.0.2", "dc1", "global"),
		member("s1.global", "10.0.0.1", "", "dc1", "global"),
		member("e2.europe", "10.1.0.2", "", "eu1", "europe"),
		member("e1.europe", "10.1.0.1", "", "eu1", "europe"),
	}}
	api.SortAgentMembers(resp.Members)
	marked := func(leaders map[string]string) [][]string {
		lines := strings.Split(formatMembers(resp, leaders, false), "\n")
		must.SliceLen(t, 6, lines)
		var got [][]string
		for _, l := range lines[1:] {
			c := columns(l)
			got = append(got, []string{c[0], c[4]})
		}
		return got
	}
	must.Eq(t, [][]string{{"e1.europe", "false"}, {"e2.europe", "true"}, {"s1.global", "false"}, {"s2.global", "true"}, {"s3.global", "false"}},
		marked(map[string]string{"global": "10.0.0.2:4647", "europe": "10.1.0.2:4647"}))
	must.Eq(t, [][]string{{"e1.europe", "false"}, {"e2.europe", "false"}, {"s1.global", "false"}, {"s2.global", "true"}, {"s3.global", "false"}},
		marked(map[string]string{"global": "10.0.0.2:4647", "europe": ""}), must.Sprint("a region without a leader marks none"))
}

// `operator raft list-peers` prints upstream's columns; -stale answers
// from the agent's server itself.
func TestOperatorRaftListPeers(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	for _, args := range [][]string{nil, {"-stale"}} {
		code, out, errOut := run(t, a, raftListPeers, args...)
		must.Eq(t, 0, code, must.Sprint(errOut))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		must.SliceLen(t, 2, lines)
		must.Eq(t, []string{"Node", "ID", "Address", "State", "Voter", "RaftProtocol"}, columns(lines[0]))
		must.Eq(t, []string{a.Config().NodeName + ".global", a.Server().ID(), a.Server().RPCAddr().String(), "leader", "true", "3"},
			columns(lines[1]))
	}
}

// `operator raft remove-peer` takes exactly one of -peer-id and
// -peer-address, and reports a peer the cluster does not have without
// removing anything.
func TestOperatorRaftRemovePeer(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)

	code, _, errOut := run(t, a, raftRemovePeer)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Missing peer: give -peer-id or -peer-address")
	code, _, errOut = run(t, a, raftRemovePeer, "-peer-id=a", "-peer-address=b")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Give only one of -peer-id and -peer-address")
	code, _, errOut = run(t, a, raftRemovePeer, "-peer-id=no-such-id")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Error removing peer: Unexpected response code: 404 (raft peer not found: id "no-such-id" is not in the raft configuration)`)
	code, _, errOut = run(t, a, raftRemovePeer, "-peer-address=127.0.0.1:1")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `address "127.0.0.1:1" is not in the raft configuration`)

	peers, err := apiClient(t, a).Status().Peers()
	must.NoError(t, err)
	must.SliceLen(t, 1, peers)
}

// `server join` and `server force-leave` need their arguments, and say
// why a join failed (a dev server has no gossip pool).
func TestServerJoinAndForceLeave_Errors(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)

	code, _, errOut := run(t, a, serverJoin)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "at least one argument: <addr>")
	code, _, errOut = run(t, a, serverJoin, "127.0.0.1:1")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Error: failed joining: a dev server has no gossip pool to join")

	code, _, errOut = run(t, a, forceLeave)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "This command takes one argument: <node>")
}

// A parent command given a word that is none of its subcommands says so
// and exits 1, instead of printing its help as if the typo were fine;
// alone, it prints its help with the subcommand list (on stderr, as the
// cli library does for a help exit).
func TestParentCommands_UnknownSubcommand(t *testing.T) {
	for _, args := range [][]string{{"server", "memebers"}, {"operator", "raft", "list"}, {"job", "sttus"}, {"node", "x"}} {
		ui := cli.NewMockUi()
		must.Eq(t, 1, RunWithUi(args, ui), must.Sprint(args))
		parent := strings.Join(args[:len(args)-1], " ")
		must.StrContains(t, ui.ErrorWriter.String(), `"`+args[len(args)-1]+`" is not a subcommand of "nomad `+parent+`"`, must.Sprint(args))
		must.StrNotContains(t, ui.ErrorWriter.String()+ui.OutputWriter.String(), "Usage:", must.Sprint(args))
	}

	ui := cli.NewMockUi()
	must.Eq(t, 1, RunWithUi([]string{"operator", "raft"}, ui))
	help := ui.ErrorWriter.String()
	must.StrContains(t, help, "Usage: nomad operator raft <subcommand>")
	must.StrContains(t, help, "list-peers")
	must.StrContains(t, help, "remove-peer")
}
