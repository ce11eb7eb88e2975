// Package client is a Go client of the fleetapi client API v2, generated
// by oapi-codegen from the published OpenAPI document
// (api/testdata/openapi.golden.json). Do not edit client.gen.go: change
// the API, update the golden document (go test ./api -run TestOpenAPIGolden
// -update), then run go generate ./client. .ci/openapi-lint fails when the
// checked-in client is not what the generator makes of the document.
//
// Base URL: the server's origin followed by /api/v2, for example
//
//	c, err := client.NewClientWithResponses("http://127.0.0.1:8080/api/v2",
//		client.WithRequestEditorFn(func(ctx context.Context, r *http.Request) error {
//			r.Header.Set("Authorization", "Bearer "+token)
//			return nil
//		}))
package client

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../api/testdata/openapi.golden.json
