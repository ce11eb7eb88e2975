package policy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/loader/filter"
)

// The bounds of a policy bundle (docs/policy.md §7, "Bundles"). A policy
// set is about 100 KB; the bounds leave room for eighty times that and
// keep what a hostile bundle can make a replica allocate to a small
// multiple of MaxBundleSize. They are checked by readBundleArchive before
// OPA sees a byte of the bundle.
const (
	// MaxBundleSize bounds the compressed bundle (the file or the HTTP
	// body) and, separately, the decompressed tar stream as a whole
	// (every member, tar headers included).
	MaxBundleSize = 8 << 20
	// MaxBundleFileSize bounds one member of the bundle, as its tar
	// header declares it: a larger declaration is refused before the
	// member is read.
	MaxBundleFileSize = 2 << 20
	// MaxBundleFiles bounds the number of entries of the tar stream
	// (files, directories and any other entry).
	MaxBundleFiles = 1000
)

// errTooLarge is returned by a capReader that was asked for more than it
// may give.
var errTooLarge = errors.New("too large")

// capReader reads at most n bytes from r and fails with errTooLarge,
// rather than ending, when r has more: a bound that io.LimitReader would
// turn into a silently truncated stream.
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	if c.n < 0 {
		return k, errTooLarge
	}
	return k, err
}

// bundleMember is one regular file of a bundle's tar stream, read whole.
type bundleMember struct {
	name string
	data []byte
}

// readBundleArchive reads the gzipped tarball of an OPA bundle from r
// within the bounds above, before anything of it is parsed: at most
// MaxBundleSize compressed bytes are read and at most MaxBundleSize
// decompressed; a member whose header declares more than
// MaxBundleFileSize, or that would take the members' declared sizes past
// MaxBundleSize, is refused from its header alone, before it is read; a
// member's buffer grows with what is actually read, never with what a
// header declares; a stream of more than MaxBundleFiles entries is
// refused. Only regular files and directories may be entries (a link,
// device or other entry is refused: `opa build` writes none); directories
// and pax global headers are skipped. A name that escapes the bundle
// (`..`) or appears twice is refused. name names the bundle in errors.
func readBundleArchive(r io.Reader, name string) ([]bundleMember, error) {
	compressed := &capReader{r: r, n: MaxBundleSize}
	gz, err := gzip.NewReader(compressed)
	if err != nil {
		return nil, bundleStreamError(name, compressed, nil, fmt.Errorf("not a gzipped bundle: %w", err))
	}
	gz.Multistream(false)
	stream := &capReader{r: gz, n: MaxBundleSize}
	tr := tar.NewReader(stream)
	var members []bundleMember
	seen := map[string]bool{}
	var declared int64
	for entries := 0; ; entries++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			return members, nil
		}
		if err != nil {
			return nil, bundleStreamError(name, compressed, stream, err)
		}
		if entries >= MaxBundleFiles {
			return nil, fmt.Errorf("policy bundle %s: more than %d entries", name, MaxBundleFiles)
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		default:
			return nil, fmt.Errorf("policy bundle %s: entry %q is not a regular file (tar type %q)", name, hdr.Name, hdr.Typeflag)
		}
		if slices.Contains(strings.Split(filepath.ToSlash(hdr.Name), "/"), "..") {
			return nil, fmt.Errorf("policy bundle %s: entry name %q leaves the bundle", name, hdr.Name)
		}
		clean := path.Clean("/" + filepath.ToSlash(hdr.Name))
		if seen[clean] {
			return nil, fmt.Errorf("policy bundle %s: entry %s twice", name, clean)
		}
		seen[clean] = true
		if hdr.Size > MaxBundleFileSize {
			return nil, fmt.Errorf("policy bundle %s: member %s declares %d bytes, more than the %d a member may have", name, hdr.Name, hdr.Size, MaxBundleFileSize)
		}
		if declared += hdr.Size; declared > MaxBundleSize {
			return nil, fmt.Errorf("policy bundle %s: its members declare more than %d bytes in all (at %s)", name, MaxBundleSize, hdr.Name)
		}
		var buf bytes.Buffer
		if hdr.Size > 0 {
			// Grow with what is read: a header that lies about its size
			// costs what the stream really holds, not what it declares.
			buf.Grow(int(min(hdr.Size, 64<<10)))
		}
		if _, err := buf.ReadFrom(tr); err != nil {
			return nil, bundleStreamError(name, compressed, stream, fmt.Errorf("member %s: %w", hdr.Name, err))
		}
		members = append(members, bundleMember{name: hdr.Name, data: buf.Bytes()})
	}
}

// bundleStreamError names the bound that err comes from, if any.
func bundleStreamError(name string, compressed, stream *capReader, err error) error {
	switch {
	case compressed.n < 0:
		return fmt.Errorf("policy bundle %s: larger than %d bytes", name, MaxBundleSize)
	case stream != nil && stream.n < 0:
		return fmt.Errorf("policy bundle %s: decompresses to more than %d bytes", name, MaxBundleSize)
	}
	return fmt.Errorf("policy bundle %s: %w", name, err)
}

// memLoader hands the members read by readBundleArchive to OPA's bundle
// reader (bundle.NewCustomReader) as OPA's own tarball loader would, with
// the same paths, but from memory: OPA never reads the archive itself.
type memLoader struct {
	members []bundleMember
	next    int
}

// NextFile returns the next member, or io.EOF.
func (l *memLoader) NextFile() (*bundle.Descriptor, error) {
	if l.next >= len(l.members) {
		return nil, io.EOF
	}
	m := l.members[l.next]
	l.next++
	return bundle.NewDescriptor(filepath.Join("", m.name), m.name, bytes.NewBuffer(m.data)), nil
}

// WithFilter is not used by bundle.Reader for a custom loader; the loader
// ignores it.
func (l *memLoader) WithFilter(filter.LoaderFilter) bundle.DirectoryLoader { return l }

// WithPathFormat is ignored: paths are passed through, as OPA's tarball
// loader does by default.
func (l *memLoader) WithPathFormat(bundle.PathFormat) bundle.DirectoryLoader { return l }

// WithSizeLimitBytes is ignored: readBundleArchive has bounded every
// member already.
func (l *memLoader) WithSizeLimitBytes(int64) bundle.DirectoryLoader { return l }

// WithFollowSymlinks is ignored: the members are regular files.
func (l *memLoader) WithFollowSymlinks(bool) bundle.DirectoryLoader { return l }
