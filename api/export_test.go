package api

// ErrorCodes exposes the error codes of the error table to the external
// tests.
var ErrorCodes = errorCodes
