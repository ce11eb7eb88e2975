package main

import (
	"context"

	"github.com/fleetapi/fleetapi/api"
)

func runOpenAPI(_ context.Context, args []string, _ func(string) string, con console) error {
	cmd := newCommand("openapi", "[--markdown]", `Print the OpenAPI 3.1 document of the API, byte for byte the body of GET
/api/v2/openapi.json. With --markdown, print the API guide docs/api.md
instead: its prose with every operation of the document and the error
table put in (go run ./cmd/fleetapi openapi --markdown > docs/api.md).`)
	markdown := cmd.fs.Bool("markdown", false, "print the API guide (docs/api.md) generated from the document")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	doc, err := openAPIDocument()
	if err != nil {
		return err
	}
	if *markdown {
		if doc, err = apiGuide(doc, api.ErrorTable()); err != nil {
			return err
		}
	}
	_, err = con.out.Write(doc)
	return err
}

// openAPIDocument is the OpenAPI document of a server with the default
// configuration.
func openAPIDocument() ([]byte, error) {
	srv, err := api.New(api.Config{})
	if err != nil {
		return nil, err
	}
	return srv.OpenAPI()
}
