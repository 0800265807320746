// Package docker is the "docker" task driver: each task is a container run
// through the Docker Engine API, by Docker or by Podman's Docker-compatible
// service (`podman system service`).
//
// The engine is spoken to with a small client of our own over net/http on
// the engine's socket (client.go), covering only the endpoints the driver
// needs: ping, version, image inspect/pull/import/load/remove and container
// create/start/kill/wait/inspect/logs/list/remove. The official SDKs
// (github.com/docker/docker/client, github.com/fsouza/go-dockerclient) are
// available, but either pulls in dozens of modules (OpenTelemetry, the
// distribution and containerd type trees) and megabytes of binary for a
// dozen HTTP calls, and the agent runs on small devices. The API shapes
// used are stable since engine API 1.24 and served by Podman 4.
//
// As the other drivers, it runs in the client process: no helper process
// per task. A goroutine per task follows the container's log stream into
// the allocation's log files, and one waits for its exit. The container
// outlives the agent; the persisted handle holds the container ID, and
// RecoverTask follows the container again, resuming the log stream from
// the last write to the log files. Containers carry upstream's
// com.hashicorp.nomad.* labels, which FindTask uses when a client lost its
// state.
//
// The package owns the plugin config (endpoint, allow_privileged,
// volumes, gc, pull_activity_timeout), the task config keys, image pulls
// with their progress events, and the image garbage collection.
package docker
