package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// floorPost is the ingest workload's floor: each batch through
// Store.IngestReadings, the storage entry point POST /readings calls, with
// the objects scope the policy engine compiles for the feed's principal on
// that route (compiled once per feed here; the API takes it from the
// engine's cache), without HTTP, authentication, policy or JSON.
func (h *harness) floorPost(ctx context.Context, gws []*gateway) (postFunc, error) {
	scopes := map[*feed]policy.Scope{}
	for _, g := range gws {
		for _, f := range g.feeds {
			in := policy.NewInput(f.member.principal, "POST", "/readings", h.today)
			s, err := h.engine.Scope(ctx, in, storage.Objects.Resource())
			if err != nil {
				return nil, fmt.Errorf("ingest floor: scope of %s: %w", f.member.principal.Account.Username, err)
			}
			scopes[f] = s
		}
	}
	return func(ctx context.Context, f *feed, rs []reading) (batchOutcome, error) {
		in := make([]storage.Reading, len(rs))
		for i := range rs {
			in[i] = storageReading(&rs[i])
		}
		res, err := h.store.IngestReadings(ctx, scopes[f], in, time.Now())
		if err != nil {
			return batchOutcome{}, err
		}
		out := batchOutcome{accepted: int64(res.Accepted), duplicates: int64(res.Duplicates)}
		for i, o := range res.Outcomes {
			if o != storage.ReadingAccepted && o != storage.ReadingDuplicate {
				if out.rejected == 0 {
					out.firstRejection = fmt.Sprintf("item %d outcome %d (%s)", i, o, rs[i].IMEI)
				}
				out.rejected++
			}
		}
		return out, nil
	}, nil
}

// storageReading is the reading as the API hands it to storage.
func storageReading(r *reading) storage.Reading {
	ign := r.Ignition
	attrs := make(map[string]any, len(r.Attributes))
	for k, v := range r.Attributes {
		attrs[k] = v
	}
	return storage.Reading{
		IMEI: r.IMEI, Time: r.Time,
		Lat: &r.Lat, Lon: &r.Lon, Speed: &r.Speed, Heading: &r.Heading, Altitude: &r.Altitude,
		Odometer: &r.Odometer, EngineHours: &r.EngineHours, Ignition: &ign, Attributes: attrs,
	}
}
