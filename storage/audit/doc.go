// Package audit is the audit trail of management writes (docs/design.md
// §9): the event a write records (Event, with the changes Diff finds),
// the actions it knows (Targets: the table each one's target is in and
// the fields that hold personal data), and Write, the one place a row of
// audit_events is written, which refuses an event without an actor, a
// target or a known action and changes that hold a secret or a stored
// token hash (ErrSecret). It writes inside the caller's transaction and
// runs no scoped query: storage's management writes call it, and storage
// lists the trail through the management scope (storage.AuditEvents).
package audit
