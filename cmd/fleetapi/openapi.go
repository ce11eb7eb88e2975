package main

import (
	"context"

	"github.com/fleetapi/fleetapi/api"
)

func runOpenAPI(_ context.Context, args []string, _ func(string) string, con console) error {
	cmd := newCommand("openapi", "", "Print the OpenAPI 3.1 document of the API, byte for byte the body of GET /api/v2/openapi.json.")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
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
	_, err = con.out.Write(doc)
	return err
}
