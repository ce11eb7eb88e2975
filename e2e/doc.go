// Package e2e holds the black-box suite of fleetapi: it builds the real
// binary, starts `fleetapi serve` on port 0 against a database with the
// demo data, and drives every operation of the OpenAPI document through the
// generated client (package client), validating every response against the
// published document on the way. It has tests only.
package e2e
