package storage

import (
	"net/mail"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
)

// Passenger is a row of passengers (DESIGN §5).
type Passenger struct {
	bun.BaseModel `bun:"table:passengers,alias:p"`

	PassengerID       int64  `bun:"passenger_id,pk,autoincrement" json:"passenger_id"`
	AccountID         int64  `bun:"account_id,notnull" json:"-"`
	PassengerName     string `bun:"passenger_name,notnull" json:"passenger_name"`
	PassengerAssignID string `bun:"passenger_assign_id,notnull" json:"passenger_assign_id"`
	PassengerIDN      string `bun:"passenger_idn,notnull" json:"passenger_idn"`
	PassengerAddress  string `bun:"passenger_address,notnull" json:"passenger_address"`
	PassengerPhone    string `bun:"passenger_phone,notnull" json:"passenger_phone"`
	PassengerEmail    string `bun:"passenger_email,notnull" json:"passenger_email"`
	PassengerDesc     string `bun:"passenger_desc,notnull" json:"passenger_desc"`
	PassengerClientID string `bun:"passenger_client_id,notnull" json:"passenger_client_id"`
	PassengerActive   bool   `bun:"passenger_active,notnull" json:"passenger_active"`
	// PassengerPickupPointID is ≥ 1 when set.
	PassengerPickupPointID *int64    `bun:"passenger_pickup_point_id" json:"passenger_pickup_point_id"`
	CreatedAt              time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp" json:"-"`
}

// Normalize applies the stored form of DESIGN §5: the name and assign id
// trimmed (whitespace, controls and zero-width characters at the ends),
// the assign id in Unicode NFC and upper-cased. Nothing else of what the
// client sent is changed.
func (p *Passenger) Normalize() {
	p.PassengerName = trimText(p.PassengerName)
	p.PassengerAssignID = assignIDForm(p.PassengerAssignID)
}

// Validate checks a normalised passenger against DESIGN §5 and returns the
// failing fields (field name → reason); nil when it is valid.
func (p *Passenger) Validate() map[string]string {
	bad := map[string]string{}
	if n := utf8.RuneCountInString(p.PassengerName); n < 1 || n > 100 {
		bad["passenger_name"] = "required, 1 to 100 characters"
	} else if !visible(p.PassengerName) {
		bad["passenger_name"] = "must contain a visible character"
	}
	if utf8.RuneCountInString(p.PassengerAssignID) > 50 {
		bad["passenger_assign_id"] = "at most 50 characters"
	}
	if p.PassengerEmail != "" && !ValidEmail(p.PassengerEmail) {
		bad["passenger_email"] = "not a valid e-mail address"
	}
	if utf8.RuneCountInString(p.PassengerDesc) > 1000 {
		bad["passenger_desc"] = "at most 1000 characters"
	}
	if p.PassengerPickupPointID != nil && *p.PassengerPickupPointID < 1 {
		bad["passenger_pickup_point_id"] = "must be 1 or more"
	}
	if len(bad) == 0 {
		return nil
	}
	return bad
}

// ValidEmail accepts a bare address (no display name, no angle brackets).
func ValidEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}
