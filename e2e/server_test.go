package e2e_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/webhook"
)

// syncBuffer collects the server's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cleanEnv is this process's environment without fleetapi's and
// OpenTelemetry's settings, so that the server runs with its defaults.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLEET_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}

var listenRe = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// startServer builds cmd/fleetapi, imports the demo data into a new
// database and runs `fleetapi serve` on a free port of 127.0.0.1. It
// returns the server's origin; the server is stopped (SIGTERM) when the
// test ends.
func startServer(t *testing.T) string {
	t.Helper()
	db := storagetest.New(t)
	if _, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	// A webhook sealing key, so that /webhooks can keep secrets.
	key := make([]byte, webhook.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return serve(t, db.URL, "FLEET_WEBHOOK_KEY="+base64.StdEncoding.EncodeToString(key))
}

// serve builds cmd/fleetapi and runs `fleetapi serve` on the database at
// dbURL, with the demo tokens allowed and the extra environment env, on a
// free port of 127.0.0.1. It returns the server's origin; the server is
// stopped (SIGTERM) when the test ends.
func serve(t testing.TB, dbURL string, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fleetapi")
	build := exec.Command("go", "build", "-o", bin, "github.com/fleetapi/fleetapi/cmd/fleetapi")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var logs syncBuffer
	cmd := exec.Command(bin, "serve", "--allow-demo-tokens") // the demo data's tokens are what it tests with
	cmd.Env = append(append(cleanEnv(), "FLEET_DATABASE_URL="+dbURL, "FLEET_ADDR=127.0.0.1:0", "FLEET_DECISION_LOG=off"), env...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("fleetapi serve: %v\n%s", err, logs.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("fleetapi serve did not stop on SIGTERM\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenRe.FindStringSubmatch(logs.String()); m != nil {
			return "http://" + m[1]
		}
		select {
		case err := <-exited:
			t.Fatalf("fleetapi serve exited: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("fleetapi serve did not start\n%s", logs.String())
	return ""
}

// validatingTransport checks every response of the real server against the
// published OpenAPI document (the golden file) before the client sees it.
type validatingTransport struct {
	t      *testing.T
	router routers.Router
	doc    *openapi3.T

	mu  sync.Mutex
	ops map[string]bool // operationIds of the responses seen
}

// unexercised returns the operations of the document that no response
// came from.
func (v *validatingTransport) unexercised() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, item := range v.doc.Paths.Map() {
		for _, op := range item.Operations() {
			if !v.ops[op.OperationID] {
				out = append(out, op.OperationID)
			}
		}
	}
	return out
}

func newValidatingTransport(t *testing.T) *validatingTransport {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "api", "testdata", "openapi.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &validatingTransport{t: t, router: router, doc: doc, ops: map[string]bool{}}
}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	probe := req.Clone(context.Background())
	probe.URL.Scheme, probe.URL.Host = "", ""
	route, params, err := v.router.FindRoute(probe)
	if err != nil {
		v.t.Errorf("%s %s: no operation in the document: %v", req.Method, req.URL.Path, err)
		return resp, nil
	}
	v.mu.Lock()
	v.ops[route.Operation.OperationID] = true
	v.mu.Unlock()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		v.t.Errorf("%s %s (%s): status %d does not match the OpenAPI document: %v\n%s",
			req.Method, req.URL, route.Operation.OperationID, resp.StatusCode, err, body)
	}
	return resp, nil
}
