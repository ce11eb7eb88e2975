package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/authsync"
	"github.com/fleetapi/fleetapi/telemetry"
	"github.com/fleetapi/fleetapi/webhook"
)

// startSender starts this replica's webhook sender (package delivery) on
// a pool of its own (cfg.WebhookWorkers connections, plus one for the
// queue's reads): a worker holds its connection while it sends (up to
// FLEET_WEBHOOK_TIMEOUT), so the sender never takes the API's
// connections (docs/locking.md, "Webhook deliveries"). It returns the
// sender's wake (for the notification channel's listener) and the stop,
// which abandons the sends in flight (due again at once, for any replica)
// and closes the pool. Without a key ring (FLEET_WEBHOOK_KEY unset, serve)
// no secret can be opened, and with FLEET_WEBHOOK_WORKERS=0 the replica
// leaves the sending to the others: nothing is started.
func startSender(ctx context.Context, cfg config, engine *policy.Engine, log *slog.Logger, tel *telemetry.Providers) (wake func(), stop func(), err error) {
	if cfg.WebhookKeys == nil || cfg.WebhookWorkers == 0 {
		log.Info("webhook deliveries not sent by this replica: FLEET_WEBHOOK_KEY is not set or FLEET_WEBHOOK_WORKERS is 0")
		return func() {}, func() {}, nil
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: cfg.WebhookWorkers + 1, TracerProvider: tel.Tracer, MeterProvider: tel.Meter,
		Target: storage.TargetPrimary})
	ccfg := cfg.WebhookURLs
	ccfg.Timeout = cfg.WebhookTimeout
	s, err := delivery.New(delivery.Options{Store: storage.NewStore(db), Policy: engine, Client: webhook.NewClient(ccfg), Keys: cfg.WebhookKeys,
		Workers: cfg.WebhookWorkers, EndpointInflight: cfg.WebhookEndpointInflight, Schedule: cfg.WebhookRetries,
		DisableAfter: cfg.WebhookDisableAfter, Logger: log, MeterProvider: tel.Meter})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// the cancels of DELETE /webhooks/{id}, deactivations and erases
	// (storage.WebhookCancelChannel), on a LISTEN session of their own
	cancels := authsync.NewWakeListener(cfg.listenURL(), func() {}, authsync.WakeOptions{Logger: log, Channel: storage.WebhookCancelChannel,
		Payload: s.Cancel, ApplicationName: "fleetapi webhook cancel listener"})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		wg.Go(func() { _ = cancels.Run(sctx) })
		s.Run(sctx)
		wg.Wait()
	}()
	return s.Wake, func() {
		cancel()
		<-done
		db.Close()
	}, nil
}
