// Package getter fetches a task's artifacts onto the client: http(s), git
// and local files, with go-getter's checksum and archive options, the
// request headers and the getter mode of the `artifact` block, confined to
// the task's allocation directory and to the limits of the agent's
// `client { artifact { ... } }` block.
//
// Beyond upstream, http(s) downloads go through a content Cache on the
// client's disk, keyed by the artifact's checksum when it has one and by
// its URL (and headers) with the server's validators (ETag, Last-Modified)
// otherwise. A fetch whose checksum is cached makes no request; one whose
// URL is cached makes a conditional GET and keeps the cached copy on 304;
// and one whose server cannot be reached (a transport error or a 5xx)
// installs the cached copy rather than failing, so that a node rebooted
// while cut off starts its tasks with what it already had. The cache is
// bounded and evicts the least recently used entry. A git clone is kept
// as a tar of its tree keyed by source and options: every fetch clones
// (a ref may move), and a failed clone installs the kept tree. Local
// sources are not cached: they are on the node already.
//
// go-getter (github.com/hashicorp/go-getter/v2, MPL-2.0) does the git and
// local-file fetches and every install: checksum files aside, decompression
// with its limits, and the getter modes. v2 rather than upstream's v1
// because v1's getter package links the S3 and GCS SDKs into every binary
// that imports it (a 62 MB program doing nothing else, against 8 MB), and an
// edge agent should not carry them: s3, gcs, hg and smb sources are refused
// by name (ErrUnsupportedGetter).
//
// The package does no interpolation and knows nothing of tasks: the task
// runner resolves ${...} in a Request and turns a failure into the task's
// "Failed Artifact Download" event.
package getter
