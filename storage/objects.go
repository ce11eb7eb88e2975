package storage

import "github.com/uptrace/bun"

// Object is a row of objects: a tracked device, owned by one account, with
// its current odometer (km) and engine hours (h).
type Object struct {
	bun.BaseModel `bun:"table:objects,alias:o"`

	ID          int64  `bun:"id,pk,autoincrement" json:"-"`
	IMEI        string `bun:"imei,notnull" json:"imei"`
	AccountID   int64  `bun:"account_id,notnull" json:"-"`
	Name        string `bun:"name,notnull" json:"name"`
	Odometer    int64  `bun:"odometer,notnull" json:"odometer"`
	EngineHours int64  `bun:"engine_hours,notnull" json:"engine_hours"`
}

// ObjectGrant is a row of object_grants: a device granted to a subaccount.
type ObjectGrant struct {
	bun.BaseModel `bun:"table:object_grants,alias:og"`

	SubaccountID int64  `bun:"subaccount_id,pk"`
	IMEI         string `bun:"imei,pk"`
}
