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
	CreatedAt   time.Time       `bun:"created_at,nullzero,notnull,default:current_timestamp"`
}
