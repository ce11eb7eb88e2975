package api

import (
	"context"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The store as the handlers use it: one small interface per handler set,
// each with only the methods that set calls, declared here by their
// consumer (as Authenticator and Policy are). Every read and write takes
// the row scope the policy decided; the wiring (cmd/fleetapi) passes the
// *storage.Store, which implements them all.

// Store is every store method the api calls (Config.Store).
type Store interface {
	listStore
	managedAccountStore
	accountStore
	quotaStore
	tokenStore
	objectStore
	grantStore
	eraseStore
	passengerStore
	eventStore
	notificationStore
	dueStore
	usageStore
	readingStore
	webhookStore
	configStore
}

// webhookStore keeps the webhooks and their deliveries (webhooks.go).
type webhookStore interface {
	NewWebhookID(ctx context.Context) (int64, error)
	CreateWebhook(ctx context.Context, scope policy.Scope, actor storage.Actor, nw storage.NewWebhook, idem *storage.IdempotentRequest) (storage.Webhook, bool, error)
	WebhookByID(ctx context.Context, scope policy.Scope, id int64) (storage.Webhook, error)
	UpdateWebhook(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64, p storage.WebhookPatch) (storage.Webhook, error)
	DeleteWebhook(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64) error
	RotateWebhookSecret(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64, sealed []byte) (storage.Webhook, time.Time, error)
	TestWebhook(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64) (storage.WebhookDelivery, error)
	RetryDelivery(ctx context.Context, scope policy.Scope, actor storage.Actor, id, deliveryID int64) (storage.WebhookDelivery, error)
	WebhookDeliveries(ctx context.Context, scope policy.Scope, id int64, p storage.DeliveryPage) ([]storage.WebhookDelivery, int64, error)
	zoneStore
}

// zoneStore keeps the zones (zones.go).
type zoneStore interface {
	CreateZone(ctx context.Context, scope policy.Scope, actor storage.Actor, owner int64, cz storage.CheckedZone, idem *storage.IdempotentRequest) (storage.Zone, bool, error)
	ZoneByID(ctx context.Context, scope policy.Scope, id int64) (storage.Zone, error)
	UpdateZone(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64, p storage.ZonePatch) (storage.Zone, error)
	DeleteZone(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64) error
}

// configStore writes event rules, service records and reports
// (config_write.go, docs/design.md §15).
type configStore interface {
	CreateEvent(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, e storage.Event, idem *storage.IdempotentRequest) (storage.Event, bool, error)
	UpdateEvent(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64, apply func(cur storage.Event) (storage.Event, error)) (storage.Event, error)
	DeleteEvent(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64) error
	CreateService(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, v storage.Service, idem *storage.IdempotentRequest) (storage.Service, bool, error)
	UpdateService(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64, apply func(cur storage.Service) (storage.Service, error)) (storage.Service, error)
	DeleteService(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64) error
	ServiceDone(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64, day storage.Date, odometer, engineHours *int64) (storage.Service, error)
	CreateReport(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, r storage.Report, idem *storage.IdempotentRequest) (storage.Report, bool, error)
	UpdateReport(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64, apply func(cur storage.Report) (storage.Report, error)) (storage.Report, error)
	DeleteReport(ctx context.Context, scope, mscope policy.Scope, actor storage.Actor, id int64) error
}

// readingStore stores readings and reads a device's history (readings.go,
// positions.go).
type readingStore interface {
	IngestReadings(ctx context.Context, scope policy.Scope, readings []storage.Reading, now time.Time) (storage.IngestResult, error)
	Positions(ctx context.Context, scope policy.Scope, req storage.PositionsRequest) ([]storage.Position, bool, error)
}

// The concrete store is the api's store.
var _ Store = (*storage.Store)(nil)

// listStore is what the lists read (lists.go, manage.go): storage.List is
// a generic function of the store, so the lists name its storage.Lister.
type listStore interface {
	storage.Lister
}

// managedAccountStore loads the target of a management request (manage.go).
type managedAccountStore interface {
	ManagedAccount(ctx context.Context, scope policy.Scope, id int64) (storage.Account, []tenancy.Account, bool, error)
}

// accountStore creates and updates accounts (accounts.go).
type accountStore interface {
	CreateAccount(ctx context.Context, scope policy.Scope, actor storage.Actor, a storage.Account, idem *storage.IdempotentRequest) (storage.Account, bool, error)
	UpdateAccount(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64, patch storage.AccountPatch) (storage.Account, error)
}

// quotaStore reads the quota limits and their use (accounts.go).
type quotaStore interface {
	AccountQuotas(ctx context.Context, a storage.Account) (limits.Quotas, limits.QuotaUsage, error)
	QuotasOf(ctx context.Context, id int64) (limits.Quotas, error)
	DefaultQuotas() limits.Quotas
}

// tokenStore creates and revokes tokens through the management API
// (tokens.go).
type tokenStore interface {
	CreateManagedToken(ctx context.Context, scope policy.Scope, actor storage.Actor, nt storage.NewManagedToken, idem *storage.IdempotentRequest) (string, storage.ManagedToken, bool, error)
	ManagedTokenByID(ctx context.Context, scope policy.Scope, id int64) (storage.ManagedToken, error)
	RevokeManagedToken(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64) error
}

// objectStore creates, reads and moves objects (objects.go).
type objectStore interface {
	ObjectByID(ctx context.Context, scope policy.Scope, id int64) (storage.Object, error)
	CreateObject(ctx context.Context, scope policy.Scope, actor storage.Actor, o storage.Object, idem *storage.IdempotentRequest) (storage.Object, bool, error)
	ManagedObject(ctx context.Context, scope policy.Scope, id int64) (storage.Object, error)
	MoveObject(ctx context.Context, scope policy.Scope, actor storage.Actor, id, to int64) (storage.Object, error)
}

// grantStore reads and replaces a subaccount's grants (grants.go).
type grantStore interface {
	GrantedObjects(ctx context.Context, scope policy.Scope, id int64, req storage.ListRequest) (storage.Page[storage.Object], error)
	ParentDevices(ctx context.Context, scope policy.Scope, id int64, imei []string) ([]string, error)
	ReplaceGrants(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64, imei []string) ([]storage.Object, error)
}

// eraseStore erases an account (erase.go).
type eraseStore interface {
	EraseManagedAccount(ctx context.Context, scope policy.Scope, actor storage.Actor, id int64) (storage.Erased, error)
}

// passengerStore creates passengers (passengers.go).
type passengerStore interface {
	CreatePassenger(ctx context.Context, scope policy.Scope, owner int64, p storage.NewPassenger, idem *storage.IdempotentRequest) (storage.Passenger, bool, error)
}

// eventStore reads one event (events.go).
type eventStore interface {
	EventByID(ctx context.Context, scope policy.Scope, id int64) (storage.Event, error)
	EventZonesMissing(ctx context.Context, e storage.Event) ([]string, error)
}

// notificationStore reads notifications (notifications.go) and keeps the
// notification streams' cursors and slots (notifystream.go).
type notificationStore interface {
	NotificationByID(ctx context.Context, scope policy.Scope, id int64) (storage.Notification, error)
	NotificationStreamStart(ctx context.Context) (storage.NotificationCursor, error)
	NotificationStreamCursor(ctx context.Context, scope policy.Scope, id int64) (storage.NotificationCursor, error)
	NotificationsAfter(ctx context.Context, scope policy.Scope, after storage.NotificationCursor, limit int) ([]storage.StreamedNotification, error)
	OpenStreamSlot(ctx context.Context, accountID int64, limit int, lease time.Duration) (int64, error)
	RenewStreamSlot(ctx context.Context, id int64, lease time.Duration) (bool, error)
	CloseStreamSlot(ctx context.Context, id int64) error
}

// dueStore reads the services due (services.go).
type dueStore interface {
	DueServices(ctx context.Context, scope policy.Scope, today time.Time, limit int) ([]storage.DueService, error)
}

// usageStore reads the usage totals (usage.go).
type usageStore interface {
	UsageTotals(ctx context.Context, scope policy.Scope, req storage.UsageRequest) (storage.UsagePage, error)
}
