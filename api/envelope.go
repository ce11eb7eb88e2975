package api

import (
	"context"
	"reflect"
)

// Envelope is the success envelope of docs/api.md §1 around data of type T.
type Envelope[T any] struct {
	Success bool `json:"success" validate:"required"`
	Data    T    `json:"data"`
	Meta    Meta `json:"meta"`
}

// OutTransform fills success and meta.request_id before encoding.
func (e *Envelope[T]) OutTransform(ctx context.Context) error {
	e.Success = true
	e.Meta.RequestID = requestIDFrom(ctx)
	return nil
}

// count is the number of items in data: the length of a list, 1 for an
// object; list says which.
func (e *Envelope[T]) count() (n int, list bool) {
	if v := reflect.ValueOf(e.Data); v.Kind() == reflect.Slice {
		return v.Len(), true
	}
	return 1, false
}

// Meta is the envelope's meta object. The paging fields are present on
// list responses only.
type Meta struct {
	RequestID string `json:"request_id"`
	*Paging
}

// Paging is the paging part of a list response's meta.
type Paging struct {
	Page    int   `json:"page"`
	PerPage int   `json:"per_page"`
	Total   int64 `json:"total"`
	Pages   int64 `json:"pages"`
	// Next is the cursor after the page's last item when more items
	// follow (an extension of the spec: pass it as after to walk the
	// list); absent on the last page.
	Next string `json:"next,omitempty"`
}

// ErrorEnvelope is the error envelope of docs/api.md §1.
type ErrorEnvelope struct {
	Success bool   `json:"success"`
	Error   *Error `json:"error"`
	Meta    Meta   `json:"meta"`
}
