package storage

import "github.com/uptrace/bun"

// Objects is the objects resource: GET /objects (docs/design.md §9), the devices
// the caller may see (a subaccount: those granted to it).
var Objects = declare[Object](counted)

// Object is a row of objects: a tracked device, owned by one account, with
// its current odometer (km) and engine hours (h). It is also the wire form
// of GET /objects; the import file has its own record (importfile), which
// names the owner by username and takes no id.
type Object struct {
	bun.BaseModel `bun:"table:objects,alias:o"`

	ID          int64  `bun:"id,pk,autoincrement" json:"id"`
	IMEI        string `bun:"imei,notnull" json:"imei" list:"sort,filter,search=1"`
	AccountID   int64  `bun:"account_id,notnull" json:"account_id" list:"filter"`
	Name        string `bun:"name,notnull" json:"name" list:"sort,filter,search=2"`
	Odometer    int64  `bun:"odometer,notnull" json:"odometer"`
	EngineHours int64  `bun:"engine_hours,notnull" json:"engine_hours"`
}

// ObjectGrant is a row of object_grants: a device granted to a subaccount.
type ObjectGrant struct {
	bun.BaseModel `bun:"table:object_grants,alias:og"`

	SubaccountID int64  `bun:"subaccount_id,pk"`
	IMEI         string `bun:"imei,pk"`
}
