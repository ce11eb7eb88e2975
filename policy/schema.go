package policy

// Schema is what the engine knows of the data its scopes restrict, from
// the package that owns the data (storage.Schema): the names of the tenant
// resources, and whether a scope can be enforced exactly.
//
// The engine asks CheckScope only while it checks a policy set (New,
// Reload, LoadBundle, Check), for a sample principal of every account type,
// so that a set whose scopes the storage cannot enforce is refused before
// it serves. It never asks while it answers a request: the user of a Scope
// compiles it itself (storage keeps its SQL by Scope.Key).
type Schema interface {
	// Resources are the tenant resources, in their order.
	Resources() []Resource
	// CheckScope returns nil when scope can be enforced exactly, and
	// otherwise why not.
	CheckScope(scope Scope) error
}

// ResourceList is the Schema of the resources it names, whose scopes no
// storage enforces: it accepts every scope. It serves the policy's own
// tests and tools that read the Rego alone.
type ResourceList []Resource

// Resources returns the list.
func (l ResourceList) Resources() []Resource { return l }

// CheckScope accepts every scope.
func (ResourceList) CheckScope(Scope) error { return nil }
