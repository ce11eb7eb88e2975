package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Tokens is the list of managed tokens (GET /tokens, docs/design.md §9): the
// tokens table listed through the management scope, a row visible when its
// account_id is an account the caller manages. It is not a tenant resource
// (Descriptors, Resources).
var Tokens = Model[ManagedToken]{scopedByAccounts[ManagedToken]("account_id")}

// ManagedToken is a token as the management API shows it: a row of tokens
// without its hash (the model has no column for it, so that no query of
// the management API can read one). RateLimit is nil for the server
// default.
type ManagedToken struct {
	bun.BaseModel `bun:"table:tokens,alias:t"`

	ID          int64      `bun:"id,pk,autoincrement" json:"id"`
	AccountID   int64      `bun:"account_id,notnull" json:"account_id" list:"filter"`
	Name        string     `bun:"name,notnull" json:"name" list:"sort,filter,search=1"`
	Permissions StringList `bun:"permissions,array,notnull" json:"permissions"`
	ExpiresAt   *time.Time `bun:"expires_at" json:"expires_at"`
	RevokedAt   *time.Time `bun:"revoked_at" json:"revoked_at"`
	LastUsedAt  *time.Time `bun:"last_used_at" json:"last_used_at"`
	RateLimit   *int       `bun:"rate_limit" json:"rate_limit"`
	// ParentTokenID is the token that minted it (its lineage, docs/design.md §9);
	// nil for a token made by the command line or the import.
	ParentTokenID *int64    `bun:"parent_token_id" json:"parent_token_id" list:"filter"`
	CreatedAt     time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp" json:"created_at" list:"sort"`
}

// ValidateNewToken is the one validation of a token to create, shared by
// the command line and the import (CreateToken) and POST /tokens
// (CreateManagedToken): at most tenancy.MaxPermissions permissions, none
// twice, each in the grammar and matching a route
// (tenancy.ValidatePermissions), a rate limit not negative, an expiry
// in the future. Its error is an InvalidFields (ErrInvalid) with a reason
// per failing field, worded for a person and naming the permission, under
// the names of POST /tokens: permissions, rate_limit, expires_at.
func ValidateNewToken(permissions []string, expiresAt *time.Time, rateLimit int, now time.Time) error {
	bad := InvalidFields{}
	if err := tenancy.ValidatePermissions(permissions); err != nil {
		bad["permissions"] = err.Error()
	}
	if rateLimit < 0 {
		bad["rate_limit"] = fmt.Sprintf("rate limit %d: must not be negative", rateLimit)
	}
	if expiresAt != nil && !expiresAt.After(now) {
		bad["expires_at"] = fmt.Sprintf("expiry %s is not in the future", expiresAt.Format(time.RFC3339))
	}
	return bad.orNil()
}

// newTokenRow builds the row of a new token of account with a fresh
// secret, storing only the secret's hash; it returns the secret.
func newTokenRow(account int64, name string, permissions []string, expiresAt *time.Time, rateLimit int) (string, *Token, error) {
	secret, err := tenancy.NewTokenSecret()
	if err != nil {
		return "", nil, err
	}
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		return "", nil, err
	}
	tok := &Token{AccountID: account, Name: name, Hash: hash[:], Permissions: StringList(permissions), ExpiresAt: expiresAt}
	if tok.Name == "" {
		tok.Name = fmt.Sprintf("token-%x", hash[:4])
	}
	if rateLimit > 0 {
		tok.RateLimit = &rateLimit
	}
	return secret, tok, nil
}

// managed returns the token as the management API shows it.
func (t Token) managed() ManagedToken {
	return ManagedToken{ID: t.ID, AccountID: t.AccountID, Name: t.Name, Permissions: t.Permissions.orEmpty(),
		ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, LastUsedAt: t.LastUsedAt, RateLimit: t.RateLimit,
		ParentTokenID: t.ParentTokenID, CreatedAt: t.CreatedAt}
}

// ManagedTokenInput is a token to create through the management API.
type ManagedTokenInput struct {
	AccountID   int64
	Name        string
	Permissions []string
	// ExpiresAt is nil for never; RateLimit 0 for the server default.
	ExpiresAt *time.Time
	RateLimit int
	// ParentTokenID is the token that mints it (the caller's); 0: none.
	ParentTokenID int64
}

// NewManagedToken is a token to create through the management API: a
// ManagedTokenInput as given, which CreateManagedToken checks
// (ValidateNewToken, now), or a CheckedManagedToken, which passed the check
// already and is not checked again: the api checks first (every field's
// fault at once, before the decision) and hands on the checked value.
type NewManagedToken interface {
	// checkedToken is the token to create, checked once.
	checkedToken() (ManagedTokenInput, error)
}

// CheckedManagedToken is a token to create that passed ValidateNewToken:
// made only by CheckManagedToken. Its JSON form is its input's (the
// idempotency key's request hash).
type CheckedManagedToken struct {
	in ManagedTokenInput
	ok bool
}

// CheckManagedToken checks in at now (ValidateNewToken): the one check of
// a token to create through the management API. Its error is an
// InvalidFields (ErrInvalid).
func CheckManagedToken(in ManagedTokenInput, now time.Time) (CheckedManagedToken, error) {
	if err := ValidateNewToken(in.Permissions, in.ExpiresAt, in.RateLimit, now); err != nil {
		return CheckedManagedToken{}, err
	}
	return CheckedManagedToken{in: in, ok: true}, nil
}

// Input is the checked token.
func (c CheckedManagedToken) Input() ManagedTokenInput { return c.in }

// Inherit completes the token from the caller's own token, which mints it:
// the caller's account when none is named, the caller's expiry and rate
// limit where the token leaves them to inherit, and its lineage (the
// caller's token is its parent, docs/design.md §9). What it inherits passed
// the rule when the caller's token was made, and the caller's token
// authenticated the request: the result needs no second check.
func (c *CheckedManagedToken) Inherit(account int64, caller tenancy.Token) {
	if c.in.AccountID == 0 {
		c.in.AccountID = account
	}
	if c.in.ExpiresAt == nil && caller.ExpiresAt != nil {
		t := caller.ExpiresAt.UTC()
		c.in.ExpiresAt = &t
	}
	if c.in.RateLimit == 0 {
		c.in.RateLimit = caller.RateLimit
	}
	c.in.ParentTokenID = caller.ID
}

// MarshalJSON is the input's JSON form.
func (c CheckedManagedToken) MarshalJSON() ([]byte, error) { return json.Marshal(c.in) }

func (c CheckedManagedToken) checkedToken() (ManagedTokenInput, error) {
	if !c.ok {
		return ManagedTokenInput{}, errors.New("storage: a CheckedManagedToken not made by CheckManagedToken")
	}
	return c.in, nil
}

// checkedToken is the input checked now.
func (in ManagedTokenInput) checkedToken() (ManagedTokenInput, error) {
	c, err := CheckManagedToken(in, time.Now())
	return c.in, err
}

// errTokenName is wrapped by the ErrConflict of a token name the account
// already has.
var errTokenName = errors.New("the account already has a token of this name")

// CreateManagedToken stores a new token (token.create, docs/design.md §9) in one
// transaction with its audit row, which holds neither the secret nor its
// hash. The owning account must be in scope, the caller's management scope
// (ErrNotFound otherwise); the policy has already allowed the token. It
// returns the secret, to be shown once, and the token. With idem, a retry
// with the same request returns the first token without a secret
// (replayed; only its hash was stored) and writes nothing; with another
// request it is ErrIdempotencyKeyReused. A ManagedTokenInput is checked
// here (ErrInvalid as CreateToken returns it); a CheckedManagedToken was
// checked already. It returns ErrConflict when the account has a token of
// that name.
func (s *Store) CreateManagedToken(ctx context.Context, scope policy.Scope, actor Actor, nt NewManagedToken, idem *IdempotentRequest) (secret string, created ManagedToken, replayed bool, err error) {
	if _, err := s.compiledFor(scope, accountsScope); err != nil {
		return "", ManagedToken{}, false, err
	}
	in, err := nt.checkedToken()
	if err != nil {
		return "", ManagedToken{}, false, err
	}
	w := ManagementWrite{Accounts: []int64{in.AccountID}, Actor: actor, Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
		if err := s.checkQuota(ctx, tx.db, in.AccountID, limits.QuotaTokens); err != nil {
			return audit.Event{}, err
		}
		sec, tok, err := newTokenRow(in.AccountID, in.Name, in.Permissions, in.ExpiresAt, in.RateLimit)
		if err != nil {
			return audit.Event{}, err
		}
		if in.ParentTokenID != 0 {
			tok.ParentTokenID = &in.ParentTokenID
		}
		if _, err := tx.db.NewInsert().Model(tok).Returning("*").Exec(ctx); err != nil {
			if err = Translate(err); errors.Is(err, ErrConflict) {
				return audit.Event{}, fmt.Errorf("%w: %w: %q", ErrConflict, errTokenName, tok.Name)
			}
			return audit.Event{}, err
		}
		secret, created = sec, tok.managed()
		return audit.New(policy.ActionTokenCreate, tok.AccountID, tok.ID, nil, tokenAudit(created))
	}}
	// The key stores the token without its secret: a replay cannot show it.
	if replayed, err = idempotentManage(ctx, s, scope, w, idem, &created); err != nil {
		return "", ManagedToken{}, false, err
	}
	return secret, created, replayed, nil
}

// tokenAudit is the audited form of a token's fields: never the secret or
// its hash.
func tokenAudit(t ManagedToken) map[string]any {
	var expires, rate, parent any
	if t.ExpiresAt != nil {
		expires = t.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if t.RateLimit != nil {
		rate = *t.RateLimit
	}
	if t.ParentTokenID != nil {
		parent = *t.ParentTokenID
	}
	return map[string]any{"account_id": t.AccountID, "name": t.Name, "permissions": []string(t.Permissions.orEmpty()),
		"expires_at": expires, "rate_limit": rate, "parent_token_id": parent}
}

// ManagedTokenByID returns the token id if its account is in scope, the
// caller's management scope; ErrNotFound otherwise, exactly like a token
// that does not exist.
func (s *Store) ManagedTokenByID(ctx context.Context, scope policy.Scope, id int64) (ManagedToken, error) {
	d := Tokens.Descriptor
	row := new(ManagedToken)
	q, err := s.scopedSelect(scope, d, row)
	if err != nil {
		return ManagedToken{}, err
	}
	if err := q.Where(d.col("id")+" = ?", id).Scan(ctx); err != nil {
		return ManagedToken{}, translateOwn(err)
	}
	return *row, nil
}

// RevokeManagedToken revokes the token id (token.revoke, docs/design.md §9) in one
// transaction with its audit row: its account must be in scope, the
// caller's management scope (ErrNotFound otherwise, as for a token that
// does not exist); the policy has already allowed it. Revoking a revoked
// token keeps the first revocation time and records no change. Its
// heirs are revoked with it (the trigger tokens_revoke_heirs), each with
// its audit event; they are locked first (revocation).
func (s *Store) RevokeManagedToken(ctx context.Context, scope policy.Scope, actor Actor, id int64) error {
	tok, err := s.ManagedTokenByID(ctx, scope, id)
	if err != nil {
		return err
	}
	return s.revocation(ctx, id, func(lin lineage, last bool) error {
		_, err := s.ManageInTx(ctx, scope, ManagementWrite{Accounts: []int64{tok.AccountID}, Actor: actor, also: lin.heirLocks(),
			Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
				if err := lin.lockTokens(ctx, tx.db, last); err != nil {
					return audit.Event{}, err
				}
				var revoked []*time.Time
				if err := tx.db.NewUpdate().Model((*Token)(nil)).
					Set("revoked_at = COALESCE(revoked_at, now())").
					Where("id = ? AND account_id = ?", id, tok.AccountID).
					Returning("revoked_at").Scan(ctx, &revoked); err != nil {
					return audit.Event{}, err
				}
				if len(revoked) != 1 {
					return audit.Event{}, fmt.Errorf("%w: token %d", ErrNotFound, id)
				}
				changes := audit.Changes{}
				if tok.RevokedAt == nil && revoked[0] != nil {
					changes["revoked_at"] = audit.Change{Before: nil, After: revoked[0].UTC().Format(time.RFC3339Nano)}
				}
				return audit.Event{Action: policy.ActionTokenRevoke, TargetAccountID: tok.AccountID, TargetID: id, Changes: changes}, nil
			},
			More: func(ctx context.Context, tx *Store) ([]audit.Event, error) { return heirsRevoked(ctx, tx, id) }})
		return err
	})
}

// lineage is a token and its heirs, transitively (the tokens minted from
// it, and from those): what revoking it changes (the trigger
// tokens_revoke_heirs). Heirs live in the minter's subtree, so their
// accounts come after the token's own in the lock order.
type lineage struct {
	// token is the revoked token, account its account.
	token, account int64
	// tokens are the lineage's ids, the token's among them, ascending;
	// accounts the heirs' accounts.
	tokens, accounts []int64
}

// lineageOf reads the lineage of the token id, without locking it. A
// token that does not exist is ErrNotFound.
func lineageOf(ctx context.Context, db bun.IDB, id int64) (lineage, error) {
	var rows []struct {
		ID        int64 `bun:"id"`
		AccountID int64 `bun:"account_id"`
	}
	if err := db.NewRaw(`WITH RECURSIVE lineage AS (
			SELECT t.id, t.account_id FROM tokens AS t WHERE t.id = ?
			UNION
			SELECT t.id, t.account_id FROM tokens AS t JOIN lineage AS l ON t.parent_token_id = l.id
		)
		SELECT id, account_id FROM lineage ORDER BY id`, id).Scan(ctx, &rows); err != nil {
		return lineage{}, translateOwn(err)
	}
	lin := lineage{token: id}
	for _, r := range rows {
		lin.tokens = append(lin.tokens, r.ID)
		if r.ID == id {
			lin.account = r.AccountID
		} else {
			lin.accounts = append(lin.accounts, r.AccountID)
		}
	}
	if lin.account == 0 {
		return lineage{}, fmt.Errorf("%w: token %d", ErrNotFound, id)
	}
	return lin, nil
}

// heirLocks are the heirs' accounts, locked KEY SHARE in step 1 of the
// lock order (locks.go): their tokens change, so an erase of one of them
// (FOR UPDATE) waits for the revocation, or the revocation for it,
// before either holds a token.
func (l lineage) heirLocks() accountLocks { return accountLocks{}.with(forKeyShare, l.accounts...) }

// errLineageGrew: the lineage a revocation locked is not the lineage
// there is once it is locked (a token minted from it, or an heir's
// account erased, in between): the revocation starts again.
var errLineageGrew = errors.New("storage: the token's lineage changed while it was being locked")

// lockTokens is step 3 of a revocation (docs/locking.md): the lineage's
// tokens FOR NO KEY UPDATE, by id, after its accounts. From then on no
// token can be minted from it (a mint reads its parent FOR SHARE); the
// lineage is read again, and one that changed in between is
// errLineageGrew, unless last (the last attempt revokes what is there).
func (l lineage) lockTokens(ctx context.Context, db bun.IDB, last bool) error {
	if _, err := db.NewRaw(`SELECT id FROM tokens WHERE id = ANY(?) ORDER BY id FOR NO KEY UPDATE`,
		pgdialect.Array(l.tokens)).Exec(ctx); err != nil {
		return err
	}
	now, err := lineageOf(ctx, db, l.token)
	if err != nil {
		return err
	}
	if !last && !slices.Equal(now.tokens, l.tokens) {
		return errLineageGrew
	}
	return nil
}

// maxRevocationAttempts bounds the attempts of a revocation whose lineage
// keeps changing under it.
const maxRevocationAttempts = 5

// revocation runs revoke, a transaction revoking the token id, with the
// token's lineage read just before; it runs it again with the lineage
// read anew when the lineage changed before it was locked
// (errLineageGrew, or an heir's account erased meanwhile), at most
// maxRevocationAttempts times, the last without the check.
func (s *Store) revocation(ctx context.Context, id int64, revoke func(lin lineage, last bool) error) error {
	for attempt := 1; ; attempt++ {
		lin, err := lineageOf(ctx, s.db, id)
		if err != nil {
			return err
		}
		err = revoke(lin, attempt == maxRevocationAttempts)
		var gone *accountGoneError
		if attempt < maxRevocationAttempts && (errors.Is(err, errLineageGrew) || errors.As(err, &gone) && gone.id != lin.account) {
			continue
		}
		return err
	}
}

// heirsRevoked returns the audit events of the tokens minted from token
// id, transitively, that the statement before revoked in this
// transaction: the trigger tokens_revoke_heirs (migration
// 20261220000003) revokes them with their parent's revocation time, which
// is the transaction's now(). One token.revoke event each, owned by the
// heir's account, with its revoked_at (docs/design.md §9: every token minted from
// it, transitively, each with its audit event).
func heirsRevoked(ctx context.Context, tx *Store, id int64) ([]audit.Event, error) {
	var heirs []struct {
		ID        int64     `bun:"id"`
		AccountID int64     `bun:"account_id"`
		RevokedAt time.Time `bun:"revoked_at"`
	}
	if err := tx.db.NewRaw(`WITH RECURSIVE heirs AS (
			SELECT t.id, t.account_id, t.revoked_at FROM tokens AS t WHERE t.parent_token_id = ?
			UNION
			SELECT t.id, t.account_id, t.revoked_at FROM tokens AS t JOIN heirs AS h ON t.parent_token_id = h.id
		)
		SELECT id, account_id, revoked_at FROM heirs WHERE revoked_at = now() ORDER BY id`, id).Scan(ctx, &heirs); err != nil {
		return nil, err
	}
	out := make([]audit.Event, len(heirs))
	for i, h := range heirs {
		out[i] = audit.Event{Action: policy.ActionTokenRevoke, TargetAccountID: h.AccountID, TargetID: h.ID,
			Changes: audit.Changes{"revoked_at": audit.Change{Before: nil, After: h.RevokedAt.UTC().Format(time.RFC3339Nano)}}}
	}
	return out, nil
}
