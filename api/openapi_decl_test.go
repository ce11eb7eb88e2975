package api

import (
	"strings"
	"testing"

	"github.com/go-fuego/fuego"
)

// TestOpenAPIDeclarationErrors enumerates the ways a route's declaration
// can be incomplete or inconsistent, and checks that each stops the
// document from building (so the server from starting) with a message
// naming the cause, instead of publishing a partial document.
func TestOpenAPIDeclarationErrors(t *testing.T) {
	noBody := func(fuego.ContextNoBody) (*Envelope[Account], error) { return nil, nil }
	withBody := func(fuego.ContextWithBody[PassengerInput]) (*Envelope[Account], error) { return nil, nil }
	base := func() []fuego.RouteOption {
		return []fuego.RouteOption{fuego.OptionOperationID("op"), fuego.OptionTags("Account"),
			fuego.OptionSummary("s"), fuego.OptionDescription("d")}
	}
	undescribed := accountSchema()
	delete(undescribed.fields, "username")
	other := accountSchema()
	other.description = "another account"
	tests := []struct {
		name, want string
		register   func(g *fuego.Server)
	}{
		{"no success response", "declares no success response", func(g *fuego.Server) {
			fuego.Get(g, "/x", noBody, base()...)
		}},
		{"body not declared", "body", func(g *fuego.Server) {
			fuego.Post(g, "/x", withBody, append(base(), respondsOne(accountSchema(), Account{}))...)
		}},
		{"body declared, not taken", "body", func(g *fuego.Server) {
			fuego.Get(g, "/x", noBody, append(base(), respondsOne(accountSchema(), Account{}),
				takesBody(passengerInputSchema(), PassengerInput{}))...)
		}},
		{"path parameter without example", "needs an example", func(g *fuego.Server) {
			fuego.Get(g, "/x/{id}", noBody, append(base(), respondsOne(accountSchema(), Account{}),
				fuego.OptionPath("id", "Id.", fuego.ParamInteger()))...)
		}},
		{"tag outside the spec", "tags", func(g *fuego.Server) {
			fuego.Get(g, "/x", noBody, fuego.OptionOperationID("op"), fuego.OptionTags("Nope"),
				fuego.OptionSummary("s"), fuego.OptionDescription("d"), respondsOne(accountSchema(), Account{}))
		}},
		{"property without description", `"username"`, func(g *fuego.Server) {
			fuego.Get(g, "/x", noBody, append(base(), respondsOne(undescribed, Account{}))...)
		}},
		{"one schema name, two schemas", "declared twice", func(g *fuego.Server) {
			fuego.Get(g, "/x", noBody, append(base(), respondsOne(accountSchema(), Account{}))...)
			fuego.Get(g, "/y", noBody, fuego.OptionOperationID("op2"), fuego.OptionTags("Account"),
				fuego.OptionSummary("s"), fuego.OptionDescription("d"), respondsOne(other, Account{}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fuego.NewServer(fuego.WithoutStartupMessages(), fuego.WithoutAutoGroupTags(),
				fuego.WithEngineOptions(fuego.WithOpenAPIConfig(fuego.OpenAPIConfig{DisableLocalSave: true,
					DisableSwaggerUI: true, DisableDefaultServer: true, DisableMessages: true})))
			tt.register(fuego.Group(f, BasePath))
			_, err := finishOpenAPI(f.OpenAPI.Description())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
