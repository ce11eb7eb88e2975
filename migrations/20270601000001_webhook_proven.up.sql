-- proven_at: when the webhook's endpoint first answered 2xx since its URL
-- was set or it was last re-activated. NULL is an endpoint not proven
-- yet: the sender treats it like a failing one (one slot, within the
-- quarter of the workers for failing endpoints), so new endpoints that
-- never answer cannot hold the workers for their first attempts' timeouts
-- (docs/decisions.md, "Unproven endpoints").
ALTER TABLE webhooks ADD COLUMN proven_at timestamptz;
UPDATE webhooks AS w SET proven_at = now()
WHERE w.failing_since IS NULL
  AND EXISTS (SELECT 1 FROM webhook_deliveries AS d WHERE d.webhook_id = w.id AND d.state = 'succeeded');
