package storage

import (
	"fmt"

	"github.com/fleetapi/fleetapi/tenancy"
)

// ValidatePermission checks one token permission with
// tenancy.ValidatePermission: the grammar of DESIGN §3, and a route of the
// API that it matches. It returns an error wrapping ErrInvalid that names
// the permission otherwise.
func ValidatePermission(p string) error {
	if err := tenancy.ValidatePermission(p); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// ValidatePermissions checks every permission with ValidatePermission and
// returns the first failure (wrapping ErrInvalid).
func ValidatePermissions(ps []string) error {
	for _, p := range ps {
		if err := ValidatePermission(p); err != nil {
			return err
		}
	}
	return nil
}
