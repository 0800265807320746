// Package ui serves the web UI: plain HTML, CSS and JavaScript modules
// embedded in the binary, so every agent serves the same UI with no build
// step and nothing fetched from elsewhere. The pages read the agent's own
// /v1 API from the same origin and follow /v1/event/stream to stay current.
package ui
