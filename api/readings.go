package api

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// The per-reading codes of POST /readings (docs/design.md §14): an item's
// code in the answer's rejected list, never an error of the request.
const (
	CodeUnknownDevice   = "UNKNOWN_DEVICE"
	CodeInvalidReading  = "INVALID_READING"
	CodeReadingInFuture = "READING_IN_FUTURE"
	CodeReadingTooOld   = "READING_TOO_OLD"
)

// MaxReadings is the most readings one POST /readings takes.
const MaxReadings = 1000

// MaxReadingsBodyBytes is the largest body of POST /readings (1 MiB; every
// other body: MaxBodyBytes).
const MaxReadingsBodyBytes = 1 << 20

// unknownDeviceMessage is the one message of UNKNOWN_DEVICE: a device of
// another tenant and one that exists nowhere answer alike.
const unknownDeviceMessage = "no device with this imei in the caller's fleet"

// registerReadings declares POST /readings.
func (s *Server) registerReadings(g *fuego.Server) {
	fuego.Post(g, "/readings", s.postReadings, routeOptions(
		authErrors(), errorResponses(http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType),
		[]fuego.RouteOption{
			fuego.OptionOperationID("post_readings"), fuego.OptionTags("Fleet"),
			fuego.OptionSummary("Send device readings"),
			fuego.OptionDescription("Stores a batch of 1 to 1000 readings of the caller's devices (docs/design.md §14), body at most 1 MiB " +
				"(413 above). A malformed body (not {\"readings\": [objects]}, an empty or too long list, unknown or repeated keys, " +
				"text that is not valid UTF-8) is 400 INVALID_BODY and stores nothing. Otherwise each item is judged on its own: " +
				"the answer is 200 with the number accepted, the number of duplicates (a reading is identified by imei and time: " +
				"a retried batch stores nothing twice) and the rejected items with their index, code and field: UNKNOWN_DEVICE " +
				"(no device of the caller's data scope has the imei: another tenant's device and one that does not exist answer " +
				"alike), INVALID_READING (a field missing, out of range or of the wrong type), READING_IN_FUTURE (more than 5 " +
				"minutes ahead of the server's clock), READING_TOO_OLD (older than the positions retention). Accepted readings " +
				"are durable when the answer is sent. A reading newer than the device's newest moves its current state (GET " +
				"/objects) and is evaluated once against the account's active event rules; an older one is history only. " +
				"Subaccounts never ingest (403 PRIVILEGE_REQUIRED). Needs the token permission POST /readings and write access."),
			takesBody(readingsInputSchema(), exampleReadingsInput()),
			respondsOne(readingsResultSchema(), exampleReadingsResult()),
		})...)
}

// postReadings answers POST /readings: 200 with each item's outcome.
func (s *Server) postReadings(c fuego.ContextWithBody[ReadingsInput]) (*Envelope[ReadingsResult], error) {
	r := c.Request()
	if err := noParams(r.URL.RawQuery); err != nil {
		return nil, err
	}
	in, faults, err := decodeBody[readingsBody](r.Body)
	if err != nil {
		return nil, err
	}
	if len(faults) > 0 {
		// Text that is not valid UTF-8 is a fault of the body, not of one
		// reading: the bytes are not JSON text (RFC 8259 §8.1).
		f := slices.Sorted(maps.Keys(faults))[0]
		return nil, invalidBody(fmt.Sprintf("field %q: %s", f, faults[f]), map[string]any{"field": f})
	}
	switch {
	case in.Readings == nil:
		return nil, invalidBody(`"readings" is required: {"readings": [...]}`, map[string]any{"field": "readings"})
	case len(in.Readings) == 0 || len(in.Readings) > MaxReadings:
		return nil, invalidBody(fmt.Sprintf("readings: 1 to %d items, not %d", MaxReadings, len(in.Readings)), map[string]any{"field": "readings"})
	}
	now := s.cfg.Now()
	result := ReadingsResult{Rejected: []ReadingRejection{}}
	var valid []storage.Reading
	var index []int // valid[k] is the item index[k]
	for i, raw := range in.Readings {
		rd, rej, err := parseReading(raw, i, now, s.positionsRetention())
		if err != nil {
			return nil, err
		}
		if rej != nil {
			result.Rejected = append(result.Rejected, *rej)
			continue
		}
		valid = append(valid, rd)
		index = append(index, i)
	}
	if len(valid) > 0 {
		ctx := c.Context()
		scope, err := s.scopeFor(ctx, storage.Objects.Resource())
		if err != nil {
			return nil, err
		}
		res, err := s.cfg.Store.IngestReadings(ctx, scope, valid, now)
		if err != nil {
			return nil, err
		}
		result.Accepted, result.Duplicates = res.Accepted, res.Duplicates
		for k, o := range res.Outcomes {
			if o == storage.ReadingUnknownDevice {
				result.Rejected = append(result.Rejected, ReadingRejection{Index: index[k], Code: CodeUnknownDevice,
					Message: unknownDeviceMessage, Field: "imei"})
			}
		}
		slices.SortFunc(result.Rejected, func(a, b ReadingRejection) int { return a.Index - b.Index })
	}
	return &Envelope[ReadingsResult]{Data: result}, nil
}

// positionsRetention is Config.PositionsRetention or its default.
func (s *Server) positionsRetention() time.Duration {
	if s.cfg.PositionsRetention > 0 {
		return s.cfg.PositionsRetention
	}
	return storage.DefaultPositionsRetention
}
