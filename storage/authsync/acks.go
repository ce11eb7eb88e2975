package authsync

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"
)

// Acks is what AwaitAcks waited for.
type Acks struct {
	// Seq is the change's sequence number (0 when it could not be taken).
	Seq int64
	// Waited is how long the wait took.
	Waited time.Duration
	// Unacked names the replicas (their listeners' application names)
	// whose lease was live when the wait ended without their
	// acknowledgement: it ended at the bound, and they had stopped
	// trusting their caches by then.
	Unacked []string
	// Err is the first error met (the wait then fell back to the bound).
	Err error
}

// awaitPoll bounds the interval between two looks at the
// acknowledgements; the first look comes after 1ms, the interval doubles.
const awaitPoll = 20 * time.Millisecond

// AwaitAcks returns once every replica's authentication cache serves
// nothing older than the changes committed on db before the call (docs/design.md
// §9: the next request on every replica sees them). It takes a change
// sequence number and announces it on Channel ("ack:<seq>", delivered
// after the notifications of every change committed before), then waits
// until every replica with a live lease in fleet_auth_replicas has
// acknowledged it or its lease has ended, and at most DefaultLease:
// a replica that has not acknowledged by the end of its lease has stopped
// consulting its cache by then (Listener; the reasoning is in
// docs/decisions.md). When the database fails during the wait, it waits
// out DefaultLease, which gives the same guarantee. ctx ending cuts
// the wait short (the guarantee then does not hold); callers give it a
// context that outlives the client's.
//
// It must run after the change committed, on the primary (db may be a
// transaction pooler).
func AwaitAcks(ctx context.Context, db bun.IDB) Acks {
	start := time.Now()
	deadline := start.Add(DefaultLease)
	// No statement outlives the bound: a database that hangs ends the
	// wait at it, as one that fails does.
	qctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res := Acks{}
	finish := func() Acks {
		res.Waited = time.Since(start)
		return res
	}
	fail := func(err error) Acks {
		if res.Err == nil {
			res.Err = err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(deadline)):
		}
		return finish()
	}
	if err := db.NewRaw(`WITH n AS (SELECT nextval('fleet_auth_seq') AS seq)
		SELECT seq FROM n, pg_notify(?, ? || seq)`, Channel, ackPrefix).Scan(qctx, &res.Seq); err != nil {
		return fail(fmt.Errorf("announce the change: %w", err))
	}
	poll := time.Millisecond
	for {
		var names []string
		err := db.NewRaw(`SELECT name FROM fleet_auth_replicas WHERE lease_until > now() AND acked_seq < ? ORDER BY name`,
			res.Seq).Scan(qctx, &names)
		if err != nil {
			return fail(fmt.Errorf("read the acknowledgements of change %s: %w", strconv.FormatInt(res.Seq, 10), err))
		}
		res.Unacked = names
		if len(names) == 0 || !time.Now().Before(deadline) {
			return finish()
		}
		select {
		case <-ctx.Done():
			res.Err = ctx.Err()
			return finish()
		case <-time.After(min(poll, time.Until(deadline))):
		}
		poll = min(2*poll, awaitPoll)
	}
}
