package api

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

// docsUI holds the docs page and the Swagger UI assets it loads, built from
// the swagger-ui-dist npm package by web/build.mjs and checked in, so that
// the binary serves them with no network (and without npm at build time).
//
//go:embed docsui
var docsUI embed.FS

// docsCSP lets the docs page load its own scripts and styles and talk to
// this server only: nothing is fetched from anywhere else.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// buildOpenAPI makes the published OpenAPI document from the registered
// routes and registers the routes that serve it and the docs UI.
func (s *Server) buildOpenAPI() error {
	doc, err := finishOpenAPI(s.fuego.OpenAPI.Description())
	if err != nil {
		return err
	}
	s.openapi, err = marshalOpenAPI(doc)
	if err != nil {
		return err
	}
	mux := s.fuego.Mux
	mux.Handle("GET "+BasePath+"/openapi.json", staticFile("openapi.json", "application/json", s.openapi, false))
	page, err := docsUI.ReadFile("docsui/index.html")
	if err != nil {
		return err
	}
	mux.Handle("GET "+BasePath+"/docs", staticFile("index.html", "text/html; charset=utf-8", page, true))
	assets, err := fs.Sub(docsUI, "docsui")
	if err != nil {
		return err
	}
	mux.HandleFunc("GET "+BasePath+"/docs/{file}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		b, err := fs.ReadFile(assets, name)
		if err != nil || name == "index.html" {
			s.writeError(w, r, newError(CodeNotFound, "no such route", map[string]any{"path": r.URL.Path}))
			return
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		staticFile(name, ct, b, false).ServeHTTP(w, r)
	})
	return nil
}

// staticFile serves b with its ETag (the response headers of every answer,
// Cache-Control: no-store and nosniff, are set by withResponseHeaders).
// page adds the docs page's content security policy.
func staticFile(name, contentType string, b []byte, page bool) http.Handler {
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("ETag", etag)
		if page {
			h.Set("Content-Security-Policy", docsCSP)
			h.Set("Referrer-Policy", "no-referrer")
		} else {
			h.Set("Access-Control-Allow-Origin", "*")
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
	})
}
