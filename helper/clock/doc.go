// Package clock is the one source of time for servers, clients and
// drivers: the wall and monotonic clock and the timers every loop
// (heartbeat TTLs, broker delays, retries, restart delays, update batching,
// mock tasks) waits on. Code takes a Clock instead of calling the time
// package so that tests can run minutes of heartbeats and backoff in
// milliseconds, either with the real clock inside testing/synctest or with
// the manual clock of package clocktest where a bubble cannot be used.
package clock
