package storage

// Lister is the store a list is read from (List): *Store, its one
// implementation. List is a generic function, and a method cannot have type
// parameters, so a consumer that declares the store methods it calls as an
// interface (the api) names Lister for its lists instead of the concrete
// *Store.
type Lister interface {
	// listStore is the store List reads: sealed, so that only *Store
	// implements Lister.
	listStore() *Store
}

func (s *Store) listStore() *Store { return s }
