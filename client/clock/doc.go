// Package clock is the client's source of time: the wall and monotonic
// clock and the timers every loop (heartbeats, retries, restart delays,
// update batching) waits on. The client and its alloc runners take a Clock
// instead of calling the time package so that tests can run minutes of
// heartbeats and backoff in milliseconds, either with a fake Clock or with
// the real one inside testing/synctest.
package clock
