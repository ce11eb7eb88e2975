package main

import (
	"context"
	"io"

	"github.com/fleetapi/fleetapi/api"
)

func runOpenAPI(_ context.Context, args []string, _ func(string) string, stdout io.Writer) error {
	fs := newFlagSet("openapi", stdout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, err := api.New(api.Config{})
	if err != nil {
		return err
	}
	doc, err := srv.OpenAPI()
	if err != nil {
		return err
	}
	_, err = stdout.Write(doc) // byte for byte the body of GET /api/v2/openapi.json
	return err
}
