// Package netns creates, enters and removes Linux network namespaces kept
// alive by a bind mount on a file (as `ip netns add` keeps them under
// /var/run/netns), so that a namespace outlives every process in it and an
// agent restart finds it by path.
//
// It owns the thread juggling that namespaces need in Go: a namespace is a
// property of an OS thread, so each operation runs on a locked thread and
// puts the thread back in the namespace it came from; a thread that cannot
// be put back is left locked, and the Go runtime retires it when its
// goroutine ends rather than run other code in the wrong namespace.
//
// It knows nothing of allocations or CNI (client/allocnet does); drivers
// use Do to fork a task into an allocation's namespace.
package netns
