// Package race says whether the test binary was built with the race
// detector, for the tests that must run differently under it: the
// real-binary suites (their agents are built without it) and the storm
// scenarios (scaled down there; see internal/sim), and the packages whose
// bubbled clusters must run on one P under it (OneProcForBubbles). One
// place, so that every such test asks the same one.
package race
