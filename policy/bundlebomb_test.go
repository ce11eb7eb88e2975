package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// bomb is a hostile bundle built in the test, and what its refusal must
// mention.
type bomb struct {
	name string
	body []byte
	want string
}

// tarEntry is one entry of a hand-built tar stream: its header, and the
// data actually written after it (which may be shorter than the header
// declares: the stream then simply ends).
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

// gzipTar writes the entries as a gzipped tar stream. With truncate, the
// stream ends after the last entry's data, as a hostile one does, without
// the tar trailer (tar.Writer would refuse to close a short member).
func gzipTar(t testing.TB, entries []tarEntry, truncate bool) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if len(e.data) > 0 {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !truncate {
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if _, err := gz.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// gzipZeros is a gzipped tar member of n zero bytes whose header tells
// the truth, built without holding the n bytes (a gzip bomb: about
// n/1000 bytes compressed).
func gzipZeros(t testing.TB, name string, n int64) []byte {
	t.Helper()
	var out bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: n}); err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := n; left > 0; {
		k := min(left, int64(len(zeros)))
		if _, err := tw.Write(zeros[:k]); err != nil {
			t.Fatal(err)
		}
		left -= k
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// bundleBombs are the hostile bundles of issue 19 item 2, each refused
// for a bound of readBundleArchive. Every one but the last is harmless
// to the old loader's memory only if it is refused before OPA reads it.
func bundleBombs(t testing.TB) []bomb {
	t.Helper()
	policy := embeddedRego(t)
	valid := func() []tarEntry {
		var es []tarEntry
		for name, src := range policy {
			es = append(es, tarEntry{hdr: tar.Header{Name: "/" + name, Size: int64(len(src))}, data: []byte(src)})
		}
		return es
	}
	many := valid()
	for i := range MaxBundleFiles + 10 {
		many = append(many, tarEntry{hdr: tar.Header{Name: fmt.Sprintf("/junk/%06d", i)}})
	}
	// Members each within MaxBundleFileSize whose sum is not.
	var sum []tarEntry
	for i := range MaxBundleSize/MaxBundleFileSize + 1 {
		sum = append(sum, tarEntry{hdr: tar.Header{Name: fmt.Sprintf("/blob%d", i), Size: MaxBundleFileSize}, data: make([]byte, MaxBundleFileSize)})
	}
	sum = append(valid(), sum...)
	// Incompressible bytes: the compressed stream passes MaxBundleSize.
	noise := make([]byte, MaxBundleFileSize)
	var random []tarEntry
	for i := range MaxBundleSize/MaxBundleFileSize + 1 {
		_, _ = rand.Read(noise)
		random = append(random, tarEntry{hdr: tar.Header{Name: fmt.Sprintf("/noise%d", i), Size: MaxBundleFileSize}, data: bytes.Clone(noise)})
	}
	lying := func(size int64) []byte {
		return gzipTar(t, []tarEntry{{hdr: tar.Header{Name: "/a.rego", Size: size}}}, true)
	}
	return []bomb{
		{"header declaring 512 MiB, 0 bytes of data", lying(512 << 20), "declares 536870912 bytes"},
		{"gzip bomb: 1 GiB of zeros in one member", gzipZeros(t, "/fleet/zeros.rego", 1<<30), "declares 1073741824 bytes"},
		{"members within the bound summing past it", gzipTar(t, sum, false), "members declare more than"},
		{"more entries than allowed", gzipTar(t, many, false), fmt.Sprintf("more than %d entries", MaxBundleFiles)},
		{"incompressible, larger than the bound", gzipTar(t, random, false), "larger than"},
		{"a symlink entry", gzipTar(t, append(valid(), tarEntry{hdr: tar.Header{Name: "/x.rego", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}), false), "not a regular file"},
		{"a name leaving the bundle", gzipTar(t, append(valid(), tarEntry{hdr: tar.Header{Name: "/../../x.rego", Size: 1}, data: []byte("x")}), false), "leaves the bundle"},
		{"not gzip", make([]byte, 1<<20), "not a gzipped bundle"},
		// The attack's own: 89 bytes that made OPA's tarball loader ask
		// for 1 TiB (fatal error: runtime: out of memory).
		{"header declaring 1 TiB (the 89-byte attack)", lying(1 << 40), "declares 1099511627776 bytes"},
	}
}

// allocated runs fn and returns the bytes it allocated (runtime.MemStats
// TotalAlloc, an upper bound of the heap it added at its peak).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// maxRefusalAlloc is what refusing a hostile bundle may allocate: a small
// multiple of MaxBundleSize (issue 19 item 2).
const maxRefusalAlloc = 4 * MaxBundleSize

// TestBundleBombsRefused (issue 19 item 2): every hostile bundle is
// refused, from a file and from a URL, at start and on reload, with a
// message naming the bound, having allocated at most maxRefusalAlloc
// (measured with runtime.MemStats); an engine serving a good bundle keeps
// serving it. On 3a7d212 OPA's tarball loader allocated what the header
// declared (512 MiB here; the 1 TiB case crashes the process) and the
// bundles within the old 64 MiB compressed bound were accepted.
func TestBundleBombsRefused(t *testing.T) {
	ctx := context.Background()
	keys := newTestKeys(t)
	verify := keys.verification(t)
	good := buildBundle(t, embeddedRego(t), "good", keys.private)
	bombs := bundleBombs(t)

	// A serving engine from a bundle file, one from a bundle URL.
	file := writeTemp(t, "fleet.tar.gz", good)
	fromFile := newEngine(t, Options{Dir: file, BundleVerification: verify})
	var mu sync.Mutex
	body := good
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(body)
	}))
	defer ts.Close()
	fromURL := newEngine(t, Options{BundleURL: ts.URL, BundleVerification: verify, HTTPClient: ts.Client()})
	revFile, revURL := fromFile.Revision(), fromURL.Revision()

	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			check := func(where string, err error, alloc uint64) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), b.want) {
					t.Errorf("%s: %v, want a refusal mentioning %q", where, err, b.want)
				}
				if alloc > maxRefusalAlloc {
					t.Errorf("%s: refusing a %d-byte bundle allocated %d bytes, more than %d", where, len(b.body), alloc, maxRefusalAlloc)
				}
			}
			path := writeTemp(t, "bomb.tar.gz", b.body)
			var err error
			alloc := allocated(func() { _, err = loadPolicySource(path, nil) })
			check("load", err, alloc)
			t.Logf("%d bytes compressed: refused having allocated %.1f MiB: %v", len(b.body), float64(alloc)/(1<<20), err)
			alloc = allocated(func() { _, err = loadPolicySource(path, verify) })
			check("load with a key", err, alloc)

			// At start, from a file and from a URL: an error, not a crash.
			alloc = allocated(func() { _, err = New(ctx, Options{Dir: path, Schema: ResourceList(testResources)}) })
			check("start from the file", err, alloc)
			mu.Lock()
			body = b.body
			mu.Unlock()
			alloc = allocated(func() {
				_, err = New(ctx, Options{BundleURL: ts.URL, HTTPClient: ts.Client(), Schema: ResourceList(testResources)})
			})
			check("start from the URL", err, alloc)

			// On reload: refused, the good set serves on.
			alloc = allocated(func() { _, err = fromURL.Reload(ctx, "poll") })
			check("reload from the URL", err, alloc)
			if err := os.WriteFile(file, b.body, 0o600); err != nil {
				t.Fatal(err)
			}
			alloc = allocated(func() { _, err = fromFile.Reload(ctx, "SIGHUP") })
			check("reload from the file", err, alloc)
			for _, e := range []*Engine{fromFile, fromURL} {
				if d, err := e.Decide(ctx, principal("user").at("GET", "/services")); err != nil || !d.Allow {
					t.Errorf("the engine stopped serving: %+v %v", d, err)
				}
			}
			if fromFile.Revision() != revFile || fromURL.Revision() != revURL {
				t.Errorf("revisions %s %s, want %s %s kept", fromFile.Revision(), fromURL.Revision(), revFile, revURL)
			}
		})
	}
}

// TestBundleWithinBounds: a bundle at the bounds is still read (the
// bounds refuse bombs, not policy sets), and the members are those of the
// tar stream.
func TestBundleWithinBounds(t *testing.T) {
	entries := []tarEntry{{hdr: tar.Header{Name: "/d", Typeflag: tar.TypeDir, Mode: 0o755}}}
	for i := range MaxBundleSize/MaxBundleFileSize - 1 {
		entries = append(entries, tarEntry{hdr: tar.Header{Name: fmt.Sprintf("/d/blob%d", i), Size: MaxBundleFileSize}, data: make([]byte, MaxBundleFileSize)})
	}
	members, err := readBundleArchive(bytes.NewReader(gzipTar(t, entries, false)), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != len(entries)-1 || members[0].name != "/d/blob0" || len(members[0].data) != MaxBundleFileSize {
		t.Errorf("members: %d, first %q", len(members), members[0].name)
	}
	// A real bundle of the embedded set with a signature loads as before.
	if _, err := loadPolicySource(writeTemp(t, "b.tar.gz", buildBundle(t, embeddedRego(t), "v", "")), nil); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRefuseBundleBomb reports what refusing each hostile bundle
// allocates:
//
//	go test ./policy -run x -bench BenchmarkRefuseBundleBomb -benchmem
func BenchmarkRefuseBundleBomb(b *testing.B) {
	for _, bm := range bundleBombs(b) {
		b.Run(strings.ReplaceAll(bm.name, " ", "_"), func(b *testing.B) {
			for b.Loop() {
				if _, err := loadPolicyBundle(bytes.NewReader(bm.body), "bomb", nil); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// TestBundleBoundsExact: each bound of one member and of the entries is
// exact, as docs/policy.md states it ("at most 2 MiB for one member; at
// most 1,000 entries"): a member of exactly MaxBundleFileSize bytes and a
// stream of exactly MaxBundleFiles entries are read whole, one byte or
// one entry more is refused naming the bound. The entries count every
// kind the stream holds (directories too).
func TestBundleBoundsExact(t *testing.T) {
	member := func(size int) []byte {
		return gzipTar(t, []tarEntry{{hdr: tar.Header{Name: "/d/member.json", Size: int64(size)}, data: bytes.Repeat([]byte{'x'}, size)}}, false)
	}
	entries := func(n int) []byte {
		es := []tarEntry{{hdr: tar.Header{Name: "/d", Typeflag: tar.TypeDir, Mode: 0o755}}}
		for i := 1; i < n; i++ {
			es = append(es, tarEntry{hdr: tar.Header{Name: fmt.Sprintf("/d/%04d", i), Size: 1}, data: []byte("x")})
		}
		return gzipTar(t, es, false)
	}
	for _, c := range []struct {
		name    string
		body    []byte
		members int    // read, when accepted
		refused string // the refusal, when refused
	}{
		{"member of exactly 2 MiB", member(MaxBundleFileSize), 1, ""},
		{"member of 2 MiB + 1 byte", member(MaxBundleFileSize + 1), 0, fmt.Sprintf("declares %d bytes, more than the %d", MaxBundleFileSize+1, MaxBundleFileSize)},
		{"exactly 1,000 entries", entries(MaxBundleFiles), MaxBundleFiles - 1, ""},
		{"1,001 entries", entries(MaxBundleFiles + 1), 0, fmt.Sprintf("more than %d entries", MaxBundleFiles)},
	} {
		t.Run(c.name, func(t *testing.T) {
			members, err := readBundleArchive(bytes.NewReader(c.body), "test")
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("%d members read, error %v; want a refusal mentioning %q", len(members), err, c.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused at the bound: %v", err)
			}
			if len(members) != c.members {
				t.Fatalf("%d members, want %d", len(members), c.members)
			}
			if c.members == 1 && len(members[0].data) != MaxBundleFileSize {
				t.Fatalf("member of %d bytes read as %d", MaxBundleFileSize, len(members[0].data))
			}
		})
	}
	// The documented figures are the constants.
	if MaxBundleFileSize != 2<<20 || MaxBundleFiles != 1000 {
		t.Errorf("bounds %d bytes a member, %d entries; docs/policy.md and docs/operations.md say 2 MiB and 1,000", MaxBundleFileSize, MaxBundleFiles)
	}
}
