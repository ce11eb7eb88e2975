package storage

import (
	"fmt"
	"strings"
)

// ValidatePermission checks one token permission against the grammar of
// DESIGN §3: "*", "METHOD *" or "METHOD /route", with METHOD one of GET,
// POST, PUT, PATCH, DELETE and the route a template such as
// "/events/{id}". It returns an error wrapping ErrInvalid otherwise.
func ValidatePermission(p string) error {
	if p == "*" {
		return nil
	}
	method, target, ok := strings.Cut(p, " ")
	if !ok {
		return fmt.Errorf(`%w: permission %q: want "*", "METHOD *" or "METHOD /route"`, ErrInvalid, p)
	}
	switch method {
	case "GET", "POST", "PUT", "PATCH", "DELETE":
	default:
		return fmt.Errorf("%w: permission %q: method must be GET, POST, PUT, PATCH or DELETE", ErrInvalid, p)
	}
	if target == "*" {
		return nil
	}
	if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t\r\n?#") {
		return fmt.Errorf("%w: permission %q: route must be * or a path starting with / (no spaces, query or fragment)", ErrInvalid, p)
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
