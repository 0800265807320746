package structs_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestTaskGroup_ValidateNetworks checks that a network block the client
// could not honour is refused at registration, with the port named.
func TestTaskGroup_ValidateNetworks(t *testing.T) {
	cases := []struct {
		name string
		nw   []*structs.NetworkResource
		want string
	}{
		{"cni without a name", []*structs.NetworkResource{{Mode: "cni/"}}, `Network mode "cni/" needs a CNI network name`},
		{"dns server not an address", []*structs.NetworkResource{{DNS: &structs.DNSConfig{Servers: []string{"dns.example"}}}}, `network.dns.servers: "dns.example" is not an IP address`},
		{"dns option with a newline", []*structs.NetworkResource{{DNS: &structs.DNSConfig{Options: []string{"ndots:2\nnameserver 6.6.6.6"}}}}, `network.dns: "ndots:2\nnameserver 6.6.6.6" is not one`},
		{"hostname in host mode", []*structs.NetworkResource{{Hostname: "web"}}, "network.hostname needs network mode"},
		{"hostname invalid", []*structs.NetworkResource{{Mode: "bridge", Hostname: "web_1"}}, `network.hostname "web_1" is not a valid host name`},
		{"unknown mode", []*structs.NetworkResource{{Mode: "none"}}, `Network mode "none" is not supported`},
		{"two blocks", []*structs.NetworkResource{{}, {}}, "Only one network block"},
		{"duplicate label", []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "a"}, {Label: "a"}}}}, `label "a" is used twice`},
		{"static twice", []*structs.NetworkResource{{ReservedPorts: []structs.Port{{Label: "a", Value: 80}, {Label: "b", Value: 80}}}}, `static port 80 is already used by port "a"`},
		{"static out of range", []*structs.NetworkResource{{ReservedPorts: []structs.Port{{Label: "a", Value: 70000}}}}, `Port "a": static 70000 is out of range`},
		{"to out of range", []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "a", To: -2}}}}, `Port "a": to -2 is out of range`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := mock.Job()
			job.TaskGroups[0].Networks = tc.nw
			err := job.Validate()
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
	job := mock.Job()
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "host",
		ReservedPorts: []structs.Port{{Label: "admin", Value: 9090}}, DynamicPorts: []structs.Port{{Label: "http", To: 8080}}}}
	must.NoError(t, job.Validate())
	job.TaskGroups[0].Networks[0].Mode = "bridge"
	must.NoError(t, job.Validate())
	n, ok := job.TaskGroups[0].NamespaceNetwork()
	must.True(t, ok)
	must.Eq(t, "bridge", n.Mode)
	_, isCNI := n.CNIName()
	must.False(t, isCNI)
	job.TaskGroups[0].Networks[0] = &structs.NetworkResource{Mode: "cni/mynet", Hostname: "web-1.example",
		DNS: &structs.DNSConfig{Servers: []string{"10.0.0.53", "fd00::53"}, Searches: []string{"svc.example"}, Options: []string{"ndots:2"}}}
	must.NoError(t, job.Validate())
	n, ok = job.TaskGroups[0].NamespaceNetwork()
	must.True(t, ok)
	name, ok := n.CNIName()
	must.True(t, ok)
	must.Eq(t, "mynet", name)
}

// A host network's reserved_ports list reads as upstream writes it: single
// ports and low-high ranges, comma-separated; anything else is an error
// naming the part.
func TestParsePortRanges(t *testing.T) {
	got, err := structs.ParsePortRanges("22, 80,8000-8002,80")
	must.NoError(t, err)
	must.Eq(t, []int{22, 80, 8000, 8001, 8002}, got)
	got, err = structs.ParsePortRanges("")
	must.NoError(t, err)
	must.SliceEmpty(t, got)
	for _, bad := range []string{"x", "0", "70000", "9-3", "1-"} {
		_, err := structs.ParsePortRanges(bad)
		must.ErrorContains(t, err, "invalid port range", must.Sprint(bad))
	}
}
