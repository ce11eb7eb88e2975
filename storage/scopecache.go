package storage

import (
	"sync"
	"sync/atomic"

	"github.com/fleetapi/fleetapi/policy"
)

// scopeCacheSize is how many translated scopes a Store keeps: as many
// answers as the policy engine keeps by default, so that a scope the
// engine still has cached is translated once.
const scopeCacheSize = policy.DefaultCacheSize

// scopeCache keeps the SQL of the scopes a Store has translated, by the
// scope's Key: the policy revision, the resource and the account facts
// the scope was compiled from. It is storage's own: the policy engine
// hands out scopes and never calls storage, and storage translates each
// (revision, resource, account) once while it stays here. It is shared by
// the Stores made from one (its transactions, its replicas). A nil
// *scopeCache keeps nothing and translates every time.
type scopeCache struct {
	mu    sync.RWMutex
	items map[string]*compiledScope
	// translated counts the translations (the misses).
	translated atomic.Int64
}

func newScopeCache() *scopeCache {
	return &scopeCache{items: make(map[string]*compiledScope)}
}

// compiled returns the translation of scope, from the cache or made now.
// A scope without a Key (not an answer of the engine's cache) is
// translated and not kept. When the cache is full an arbitrary entry
// makes room: a translation costs microseconds, so any bounded policy
// will do.
func (c *scopeCache) compiled(scope policy.Scope) (*compiledScope, error) {
	key := scope.Key()
	if c != nil && key != "" {
		c.mu.RLock()
		hit, ok := c.items[key]
		c.mu.RUnlock()
		if ok {
			return hit, nil
		}
	}
	out, err := compileScope(scope)
	if err != nil || c == nil {
		return out, err
	}
	c.translated.Add(1)
	if key == "" {
		return out, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) >= scopeCacheSize {
		for k := range c.items {
			delete(c.items, k)
			break
		}
	}
	c.items[key] = out
	return out, nil
}

// ScopesTranslated returns how many scopes the Store, with the Stores
// made from it (its transactions and replicas), has translated into SQL:
// one per policy revision, resource and account facts while their SQL
// stays in its cache.
func (s *Store) ScopesTranslated() int64 {
	if s.scopes == nil {
		return 0
	}
	return s.scopes.translated.Load()
}

// Schema is storage's side of the policy engine's checks
// (policy.Options.Schema): the tenant resources (Resources), and whether a
// scope translates into SQL exactly. The engine asks it while it checks a
// policy set, never on a request; the request path translates each scope
// in storage itself (compiledFor).
func Schema() policy.Schema { return tenantSchema{} }

type tenantSchema struct{}

func (tenantSchema) Resources() []policy.Resource { return Resources() }

func (tenantSchema) CheckScope(scope policy.Scope) error {
	_, err := compileScope(scope)
	return err
}
