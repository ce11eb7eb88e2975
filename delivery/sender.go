package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

// Defaults of Options (FLEET_WEBHOOK_WORKERS, FLEET_WEBHOOK_ENDPOINT_INFLIGHT).
const (
	DefaultWorkers          = 16
	DefaultEndpointInflight = 2
	// DefaultDisableAfter is how long an endpoint fails every attempt
	// before it is disabled.
	DefaultDisableAfter = 5 * 24 * time.Hour
	// DefaultPoll is the longest a worker that found nothing due sleeps
	// without a wake: the bound on a lost LISTEN session's delay.
	DefaultPoll = 5 * time.Second
	// DefaultBackoff is the step of a worker's back-off after a failure.
	DefaultBackoff = time.Second
	// CancelHold is how long, after a cancel (Cancel), the sender claims
	// nothing of the webhook or account canceled: the time the DELETE,
	// deactivation or erase takes to commit.
	CancelHold = 10 * time.Second
	// recordTimeout bounds the recording of an attempt made.
	recordTimeout = 10 * time.Second
	// RetryShare: one claim in RetryShare looks at the due retries first
	// (then, when none is due, at the first attempts), the others at the
	// first attempts first: fresh notifications go out first, and a
	// backlog of retries still gets at least a quarter of the claims when
	// the fresh ones alone would keep every worker busy.
	RetryShare = 4
	// fullWait bounds an idle worker's sleep while due deliveries are
	// held or their endpoints full: a send ending on this replica wakes
	// it sooner, one ending on another replica does not.
	fullWait = time.Second
)

// Route is the route whose decision and scope say what a webhook's owner
// may receive: what it could read with GET /notifications/{id} now.
const Route = "/notifications/{id}"

// Store is what the sender needs of storage.Store.
type Store interface {
	ClaimDelivery(ctx context.Context, o storage.ClaimOptions) (*storage.Claim, error)
	Deliveries(ctx context.Context) (storage.DeliveryQueue, error)
}

// Policy is what the sender needs of policy.Engine.
type Policy interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
	Scope(ctx context.Context, in policy.Input, resource policy.Resource) (policy.Scope, error)
}

// Client sends one attempt (webhook.Client).
type Client interface {
	Send(ctx context.Context, m webhook.Message) webhook.Result
}

// Opener opens sealed secrets (webhook.KeyRing).
type Opener interface {
	Open(sealed, aad []byte) ([]byte, error)
}

// Options configure a Sender; zero values take the defaults.
type Options struct {
	Store  Store
	Policy Policy
	Client Client
	Keys   Opener
	// Workers is how many deliveries this replica sends at once.
	Workers int
	// EndpointInflight is the most attempts in flight to one endpoint,
	// across every replica.
	EndpointInflight int
	// Schedule is the wait after each failed attempt
	// (webhook.DefaultSchedule when nil).
	Schedule []time.Duration
	// DisableAfter is how long an endpoint fails every attempt before it
	// is disabled (DefaultDisableAfter when 0).
	DisableAfter time.Duration
	// Poll bounds an idle worker's sleep (DefaultPoll when 0).
	Poll time.Duration
	// Backoff is the step of a worker's back-off after a failure: it
	// sleeps failures × Backoff, at most 30 × Backoff (DefaultBackoff
	// when 0). A back-off after the database was unreachable
	// (storage.ErrUnavailable) ends at a wake (Wake): a notification
	// committed, or the notification listener back on the primary.
	Backoff       time.Duration
	Now           func() time.Time
	Logger        *slog.Logger
	MeterProvider metric.MeterProvider
}

// Sender runs the workers of one replica.
type Sender struct {
	opts    Options
	retry   storage.Retry
	kick    chan struct{}
	metrics *metrics
	// failing holds a token per send in flight to a failing endpoint
	// (failing_since set), unproven one per send to an endpoint not
	// proven yet (proven_at unset): each at most a quarter of the
	// workers, at least 1.
	failing, unproven chan struct{}
	// claims counts the claims, for RetryShare.
	claims atomic.Uint64

	hooksMu sync.Mutex
	// hooks are the claims this replica holds per webhook, so that a
	// claim looks past the endpoints it knows full instead of claiming
	// one of their rows to find no slot (the advisory slots stay the rule
	// across replicas).
	hooks map[int64]*hookLoad

	mu sync.Mutex
	// inflight are the sends in flight, for Cancel.
	inflight map[*send]struct{}
	// canceledWebhooks and canceledAccounts are the webhooks and accounts
	// canceled, each until when the sender claims nothing of them.
	canceledWebhooks map[int64]time.Time
	canceledAccounts map[int64]time.Time
}

// hookLoad is what this replica holds of one webhook: its claims, and
// whether the last one found it failing (one slot).
type hookLoad struct {
	claims  int
	failing bool
}

// send is one send in flight: its webhook, its owner with the accounts
// above it, and the cancel of its request.
type send struct {
	webhookID int64
	accounts  []int64
	cancel    context.CancelFunc
}

// New returns a Sender of opts with its defaults filled in.
func New(opts Options) (*Sender, error) {
	if opts.Store == nil || opts.Policy == nil || opts.Client == nil || opts.Keys == nil {
		return nil, errors.New("delivery: Store, Policy, Client and Keys are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.EndpointInflight <= 0 {
		opts.EndpointInflight = DefaultEndpointInflight
	}
	if opts.Schedule == nil {
		opts.Schedule = webhook.DefaultSchedule
	}
	if opts.DisableAfter <= 0 {
		opts.DisableAfter = DefaultDisableAfter
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = noop.NewMeterProvider()
	}
	s := &Sender{opts: opts, kick: make(chan struct{}, opts.Workers), failing: make(chan struct{}, max(opts.Workers/4, 1)),
		unproven: make(chan struct{}, max(opts.Workers/4, 1)),
		inflight: map[*send]struct{}{}, hooks: map[int64]*hookLoad{}, canceledWebhooks: map[int64]time.Time{}, canceledAccounts: map[int64]time.Time{},
		retry: storage.Retry{Schedule: opts.Schedule, DisableAfter: opts.DisableAfter, MaxRetryAfter: time.Hour}}
	m, err := newMetrics(opts.MeterProvider, opts.Store)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	return s, nil
}

// Wake tells idle workers that deliveries may be due (a notification was
// stored: the notification channel's wake). It never waits.
func (s *Sender) Wake() {
	for range cap(s.kick) {
		select {
		case s.kick <- struct{}{}:
		default:
			return
		}
	}
}

// Run runs the workers until ctx ends; a send in flight is then
// abandoned (its transaction rolled back: the delivery is due again, for
// this or another replica) and Run returns when every worker has.
func (s *Sender) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range s.opts.Workers {
		wg.Go(func() { s.work(ctx) })
	}
	wg.Wait()
}

// work is one worker: claim, send, record; when nothing is due, sleep
// until the next due delivery, a wake or the poll interval. After a
// failure it backs off; when the database was unreachable (a primary
// failing over), a wake ends the back-off: the wakes come from
// notifications committed and from the notification listener's
// reconnection, so the database is back, and the deliveries queued
// meanwhile go out then rather than at the end of a back-off grown
// while it was away (TestFailoverWebhooks: 3 s later than the first
// write answered after the promotion).
func (s *Sender) work(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		c, err := s.claim(ctx)
		if err == nil && c != nil {
			err = s.deliver(ctx, c)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			s.opts.Logger.WarnContext(ctx, "webhook delivery", "error", err)
			s.sleep(ctx, min(time.Duration(failures)*s.opts.Backoff, 30*s.opts.Backoff), errors.Is(err, storage.ErrUnavailable))
		case c == nil:
			failures = 0
			s.idle(ctx)
		default:
			failures = 0
		}
	}
}

// claim claims the next delivery this worker may send: of a failing
// endpoint only while the failing share of the workers has room, of an
// unproven one only while the unproven share has room, of no
// webhook or account canceled in the last CancelHold, of no endpoint this
// replica already fills; one claim in RetryShare takes a due retry first.
func (s *Sender) claim(ctx context.Context) (*storage.Claim, error) {
	failing, unproven := take(s.failing), take(s.unproven)
	o := storage.ClaimOptions{EndpointSlots: s.opts.EndpointInflight, SkipFailing: !failing, SkipUnproven: !unproven, Exclude: s.excluded()}
	var c *storage.Claim
	var err error
	if s.claims.Add(1)%RetryShare == 0 {
		ro := o
		ro.Retries = true
		c, err = s.opts.Store.ClaimDelivery(ctx, ro)
	}
	if c == nil && err == nil {
		c, err = s.opts.Store.ClaimDelivery(ctx, o)
	}
	if c != nil {
		s.hold(c)
	}
	// Keep the token of the endpoint's class until the claim ends, give
	// back the others. A claim may come back of a class whose token this
	// worker does not hold (its endpoint began failing between the
	// claim's look and its read of the webhook): it is sent, and there is
	// no token to give back.
	keep := func(held bool, ch chan struct{}, class bool) {
		switch {
		case held && c != nil && err == nil && class:
			c.OnEnd(func() { <-ch })
		case held:
			<-ch
		}
	}
	keep(failing, s.failing, c != nil && c.Webhook.Failing())
	keep(unproven, s.unproven, c != nil && c.Webhook.Unproven())
	return c, err
}

// take takes a token of ch when one is free.
func take(ch chan struct{}) bool {
	select {
	case ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// hold counts the claim c against its webhook until c ends; the end wakes
// one idle worker (a slot is free).
func (s *Sender) hold(c *storage.Claim) {
	id := c.WebhookID
	s.hooksMu.Lock()
	h := s.hooks[id]
	if h == nil {
		h = &hookLoad{}
		s.hooks[id] = h
	}
	h.claims++
	h.failing = c.Webhook.Failing() || c.Webhook.Unproven()
	s.hooksMu.Unlock()
	c.OnEnd(func() {
		s.hooksMu.Lock()
		if h.claims--; h.claims <= 0 {
			delete(s.hooks, id)
		}
		s.hooksMu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default:
		}
	})
}

// excluded are the webhooks canceled in the last CancelHold and the
// endpoints this replica fills (every slot, or the one of a failing
// endpoint, held by its own claims).
func (s *Sender) excluded() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := []int64{}
	for id, until := range s.canceledWebhooks {
		if now.After(until) {
			delete(s.canceledWebhooks, id)
			continue
		}
		out = append(out, id)
	}
	for id, until := range s.canceledAccounts {
		if now.After(until) {
			delete(s.canceledAccounts, id)
		}
	}
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	for id, h := range s.hooks {
		if h.claims >= s.opts.EndpointInflight || h.failing {
			out = append(out, id)
		}
	}
	return out
}

// Cancel cancels at once the sends in flight of what payload (a
// storage.WebhookCancel message, from the channel
// storage.WebhookCancelChannel) names, and claims nothing of it for
// CancelHold: a DELETE, a deactivation or an erase then never waits for a
// receiver. A canceled attempt is rolled back (not recorded: the delivery
// is deleted with its webhook or account, or stays pending while the
// webhook is inactive). A payload it does not know is ignored. It never
// waits.
func (s *Sender) Cancel(payload string) {
	m, ok := storage.ParseWebhookCancel(payload)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	until := time.Now().Add(CancelHold)
	if m.WebhookID != 0 {
		s.canceledWebhooks[m.WebhookID] = until
	}
	if m.AccountID != 0 {
		s.canceledAccounts[m.AccountID] = until
	}
	for f := range s.inflight {
		if s.canceledLocked(f.webhookID, f.accounts) {
			f.cancel()
		}
	}
}

// canceledLocked reports whether the webhook or one of the accounts was
// canceled in the last CancelHold; s.mu is held.
func (s *Sender) canceledLocked(webhookID int64, accounts []int64) bool {
	now := time.Now()
	if until, ok := s.canceledWebhooks[webhookID]; ok && now.Before(until) {
		return true
	}
	for _, a := range accounts {
		if until, ok := s.canceledAccounts[a]; ok && now.Before(until) {
			return true
		}
	}
	return false
}

// start registers the send of c, canceled by cancel; false when its
// webhook or owner was canceled meanwhile (nothing registered).
func (s *Sender) start(c *storage.Claim, cancel context.CancelFunc) (*send, bool) {
	accounts := []int64{c.Owner.Account.ID}
	for _, a := range c.Owner.Ancestors {
		accounts = append(accounts, a.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.canceledLocked(c.WebhookID, accounts) {
		// a later claim skips the webhook
		s.canceledWebhooks[c.WebhookID] = time.Now().Add(CancelHold)
		return nil, false
	}
	f := &send{webhookID: c.WebhookID, accounts: accounts, cancel: cancel}
	s.inflight[f] = struct{}{}
	return f, true
}

// end unregisters f.
func (s *Sender) end(f *send) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, f)
}

// idle sleeps until the next due delivery (read from the queue), a wake
// (a notification stored, a send of this replica ended) or the poll
// interval, whichever comes first; while deliveries are due that the
// claim could not take, at most fullWait.
func (s *Sender) idle(ctx context.Context) {
	wait := s.opts.Poll
	if q, err := s.opts.Store.Deliveries(ctx); err == nil && !q.NextDue.IsZero() {
		if d := q.NextDue.Sub(s.opts.Now()); d > 0 {
			wait = min(wait, max(d, 10*time.Millisecond))
		} else {
			// due, but held or of full endpoints: until a send ends
			wait = min(wait, fullWait)
		}
	}
	s.sleep(ctx, wait, true)
}

// sleep waits d, or less when ctx ends or (woken) a wake comes.
func (s *Sender) sleep(ctx context.Context, d time.Duration, woken bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	kick := s.kick
	if !woken {
		kick = nil
	}
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-kick:
	}
}

// deliver makes one attempt of the claimed delivery c and ends c.
func (s *Sender) deliver(ctx context.Context, c *storage.Claim) error {
	defer c.Release()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f, ok := s.start(c, cancel)
	if !ok {
		return nil // canceled: released, the claim skips it for CancelHold
	}
	defer s.end(f)
	body, skip, err := s.decide(ctx, c)
	if err != nil {
		return err
	}
	if skip != "" {
		s.metrics.skipped.Add(ctx, 1)
		return c.Skip(ctx, skip)
	}
	secrets, err := s.secrets(c)
	var res webhook.Result
	if err != nil {
		res = webhook.Result{Err: "the webhook's secret does not open with FLEET_WEBHOOK_KEY", Class: "secret"}
		s.opts.Logger.ErrorContext(ctx, "webhook secret", "webhook_id", c.WebhookID, "error", err)
	} else {
		res = s.opts.Client.Send(sctx, webhook.Message{URL: c.Webhook.URL, ID: c.MsgID, Timestamp: s.opts.Now(), Body: body, Secrets: secrets})
	}
	if ctx.Err() != nil {
		// shutting down: the attempt is abandoned, the delivery due again
		return ctx.Err()
	}
	if sctx.Err() != nil {
		// canceled (Cancel): the attempt is rolled back, not recorded
		s.metrics.canceled.Add(ctx, 1)
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	rec, err := c.Record(rctx, storage.Attempt{OK: res.OK, Status: res.Status, Duration: res.Duration, Error: res.Err, RetryAfter: res.RetryAfter}, s.retry)
	if err != nil {
		return fmt.Errorf("record the attempt of delivery %d: %w", c.ID, err)
	}
	s.metrics.attempt(ctx, res, rec)
	return nil
}

// decide takes the owner's decision and scope for Route now and builds
// the body of c; skip is the reason when the owner may not receive it.
func (s *Sender) decide(ctx context.Context, c *storage.Claim) (body []byte, skip string, err error) {
	p := c.Owner
	p.Token = tenancy.Token{AccountID: p.Account.ID, Permissions: []string{"GET " + Route}}
	in := policy.NewInput(p, "GET", Route, s.opts.Now().UTC())
	d, err := s.opts.Policy.Decide(ctx, in)
	if err != nil {
		return nil, "", err
	}
	if !d.Allow {
		return nil, "the owner may not list notifications now: " + d.Code, nil
	}
	if c.Type == storage.DeliveryTestType {
		b, err := testBody(c.WebhookID, c.CreatedAt)
		return b, "", err
	}
	scope, err := s.opts.Policy.Scope(ctx, in, storage.Notifications.Resource())
	if err != nil {
		return nil, "", err
	}
	n, err := c.Notification(ctx, scope)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, "the owner can no longer list the notification", nil
	}
	if err != nil {
		return nil, "", err
	}
	b, err := notificationBody(n)
	return b, "", err
}

// secrets opens the webhook's current secret and, while it still signs,
// the old one.
func (s *Sender) secrets(c *storage.Claim) ([][]byte, error) {
	cur, err := s.open(c.Webhook.Secret, c.WebhookID)
	if err != nil {
		return nil, err
	}
	out := [][]byte{cur}
	if len(c.Webhook.OldSecret) > 0 && c.Webhook.OldSecretUntil != nil && c.Webhook.OldSecretUntil.After(c.Now) {
		old, err := s.open(c.Webhook.OldSecret, c.WebhookID)
		if err != nil {
			return nil, err
		}
		out = append(out, old)
	}
	return out, nil
}

// open opens one sealed secret: the raw bytes that sign, or their wire
// form ("whsec_...") decoded.
func (s *Sender) open(sealed []byte, id int64) ([]byte, error) {
	plain, err := s.opts.Keys.Open(sealed, aad(id))
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(string(plain), webhook.SecretPrefix) {
		return webhook.ParseSecret(string(plain))
	}
	return plain, nil
}
