package clock

// FaultFileEnv names the file whose duration offsets the wall readings of
// Real in a binary built with the faultclock tag (go build -tags
// faultclock): the end-to-end harness's way to step one client's clock
// while the servers, on the same machine, keep theirs. The code is in
// fault_on.go, built only with the tag; the production binary has this
// name and nothing else, and ignores the variable. Without the variable a
// tagged binary's clock is the real one.
//
// The file holds a Go duration ("10m", "-10m", "0s"); a missing or empty
// file is 0. It is read again at most every FaultRecheck, on a Now call,
// so a step takes effect within that much of the process's time; a writer
// replaces it whole (write a temporary file, rename it over), and content
// that does not parse keeps the offset in force and is reported on stderr.
//
// What it models is a step of CLOCK_REALTIME, as NTP or an operator makes
// one: every reading of Real taken after the step has its wall reading
// moved by the offset and its monotonic reading untouched. So, as after a
// real step, what Go measures on the monotonic clock does not move:
// timers and AfterFunc, Sub, Since, Until, Before and After between two
// readings of the same process run (inside a testing/synctest bubble,
// whose readings carry no monotonic part, Sub moves too). What compares
// wall readings moves: a reading stripped of its monotonic part (Round(0),
// Truncate), one serialised (RPC arguments, JSON, the client's state DB)
// or compared with a time from elsewhere (the servers', an expiry). The
// client's task times and its check of a workload identity's expiry are
// on its serverClock (client/server_clock.go), which reads the servers'
// time through heartbeats and carries it forward on the monotonic clock.
//
// What it does not model, because it does not go through Real: the direct
// calls of time.Now in this tree and in the libraries, which a real step
// would move too. For a client those are crypto/x509's certificate
// validity checks on the TLS handshake (helper/tlsutil's verifyChain and
// the tls.auto bootstrap's leave VerifyOptions.CurrentTime to time.Now),
// bbolt's and hclog's timestamps, the boot time BootTime derives from
// CLOCK_REALTIME (and so the start time of a task re-attached after a
// client restart), and the kernel's own times: file mtimes and the clocks
// of the tasks the client starts, which are other processes. Net
// deadlines are set from time.Now but measured on the monotonic clock, so
// a real step does not move them either.
const FaultFileEnv = "NOMAD_FAULT_CLOCK_FILE"
