package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
)

// ServeHTTPFloor is the run `fleetops httpfloor`: the floor of the HTTP
// stack for the fixed cost of a request (docs/performance.md, "The fixed
// cost of a request"). It serves one trivial Go handler with the standard
// library's server on a loopback address: every request, whatever its path
// and headers, is answered 200 with the same JSON body (by default the
// size of a `GET /api/v2/me` answer), so that a load generator run against
// it and against fleetapi in the same minute tells what the API costs over
// net/http alone. It serves until ctx ends.
func ServeHTTPFloor(ctx context.Context, args []string, _ func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("httpfloor", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:18183", "loopback address to serve on")
	bodyFile := fs.String("body", "", "file whose bytes are every answer's body (default: a JSON object of /me's size)")
	if err := cli.Parse(fs, args, stdout, "usage: fleetops httpfloor [--addr 127.0.0.1:PORT] [--body FILE]\n\nServes a trivial Go handler (one fixed JSON body) until interrupted: the HTTP floor of `GET /me`."); err != nil {
		return err
	}
	if err := cli.CheckAddr("--addr", *addr); err != nil {
		return err
	}
	body := []byte(`{"data":{"id":1,"username":"floor","name":"The HTTP floor","type":"user","permissions":["reports","event_notifications"],"read_only":false}}`)
	if *bodyFile != "" {
		b, err := readBounded(*bodyFile, 1<<20)
		if err != nil {
			return err
		}
		body = b
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: floorHandler(body), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "httpfloor: serving %d-byte answers on http://%s\n", len(body), ln.Addr())
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// floorHandler answers every request 200 with body as JSON: what the API's
// smallest answer costs with nothing of the API around it.
func floorHandler(body []byte) http.Handler {
	length := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{length}
		_, _ = w.Write(body)
	})
}

// readBounded reads the file at path, refusing one of more than limit
// bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.Usagef("--body: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, cli.Usagef("--body %s: more than %d bytes", path, limit)
	}
	return b, nil
}
