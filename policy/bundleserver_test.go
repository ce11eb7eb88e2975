package policy

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// signedSet is the embedded policy set, new keys to sign it with and the
// verification of those keys: what a test of a signed bundle URL starts
// from.
func signedSet(t *testing.T) (keys testKeys, verify *BundleVerification, files map[string]string) {
	t.Helper()
	keys = newTestKeys(t)
	return keys, keys.verification(t), embeddedRego(t)
}

// bundleServer serves one bundle at a time with an ETag, answering
// If-None-Match with 304, as a bundle server (or an object store) does.
type bundleServer struct {
	mu       sync.Mutex
	body     []byte
	etag     string
	requests int
	notMod   int
}

func (s *bundleServer) set(body []byte, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag = body, etag
}

func (s *bundleServer) counts() (requests, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.notMod
}

func (s *bundleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if r.Header.Get("If-None-Match") == s.etag {
		s.notMod++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", s.etag)
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(s.body)
}

// switchServer serves what its current handler says; the test swaps it.
type switchServer struct {
	mu      sync.Mutex
	handler http.HandlerFunc
	hits    atomic.Int64
}

func (s *switchServer) set(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

func (s *switchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.mu.Lock()
	h := s.handler
	s.mu.Unlock()
	h(w, r)
}

// serveBody answers every request with body, without an ETag.
func serveBody(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }
}
