// Package allocnet owns the network namespaces of allocations in bridge
// and cni/<name> network modes: one namespace per allocation, attached to a
// host bridge and given its port mappings through CNI
// (github.com/containernetworking/cni driving the reference plugins
// loopback, bridge with host-local IPAM, firewall and portmap), or
// attached by the operator's network of that name in the CNI config dir.
// It writes no firewall rule itself: the plugins do, and remove them on
// CNI DEL. It also reads what the node fingerprints of CNI: the config
// dir's networks and the plugins' versions.
//
// Every allocation it sets up has a record under the client's data dir,
// written before the namespace exists, so that whatever instant the agent
// dies at, a later agent finds what to adopt or clean. Setup of an
// allocation whose record and namespace exist adopts them untouched (an
// agent restart must not disturb running tasks); Reap tears down the
// records of allocations the client no longer runs. The records hold the
// CNI configuration they were set up with, so a teardown after an operator
// changed bridge_network_* still deletes what was made.
//
// Callers: the client builds one Manager; the alloc runner's network hook
// calls Setup before the first task starts and Teardown once the
// allocation is done or destroyed. Calls for one allocation must not run
// concurrently; calls for different ones may. It imports nothing of the
// client or the drivers; drivers join the namespace by its path
// (helper/netns).
package allocnet
