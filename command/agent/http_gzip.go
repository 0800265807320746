package agent

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// gzipMinSize is the smallest answer worth compressing: below about one
// TCP segment, gzip's header and the CPU cost buy nothing (upstream uses
// the same threshold).
const gzipMinSize = 1400

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// writeBody writes a buffered answer, gzip-compressed when the caller
// accepts it and the answer is large enough, as upstream's API does. Over
// an LTE link a job list compresses to about a tenth. Streams (event
// stream, logs, monitor) do not come through here.
func writeBody(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	w.Header().Add("Vary", "Accept-Encoding")
	if len(body) >= gzipMinSize && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		var buf bytes.Buffer
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(&buf)
		_, err := gz.Write(body)
		if err == nil {
			err = gz.Close()
		}
		gzipWriters.Put(gz)
		if err == nil {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(code)
			_, _ = w.Write(buf.Bytes())
			return
		}
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// acceptsGzip reads an Accept-Encoding header: gzip (or *) listed and not
// refused with q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
}
