package storage

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

// IdempotencyKey is a row of idempotency_keys: the first response to a
// create made with an Idempotency-Key header, per calling account.
type IdempotencyKey struct {
	bun.BaseModel `bun:"table:idempotency_keys,alias:ik"`

	AccountID int64  `bun:"account_id,pk"`
	Key       string `bun:"key,pk"`
	// RequestHash identifies the request body, to detect a key reused with
	// another body.
	RequestHash []byte          `bun:"request_hash,notnull"`
	Status      int             `bun:"status,notnull"`
	Response    json.RawMessage `bun:"response,type:jsonb,notnull"`
	// Subject and SubjectID name the row the response holds (its table
	// and its key), so that an erase or a purge of that row deletes the
	// response too; nil until the response is stored.
	Subject   *string   `bun:"subject"`
	SubjectID *int64    `bun:"subject_id"`
	CreatedAt time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}

// IdempotencyKeyTTL is how long a stored response is replayed: a key
// older than this is as good as absent (a request with it is a new
// request), and Purge deletes it (docs/decisions.md, "Idempotency keys
// expire").
const IdempotencyKeyTTL = 24 * time.Hour
