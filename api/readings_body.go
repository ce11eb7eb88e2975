package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fleetapi/fleetapi/storage"
)

// The body of POST /readings and where its faults are drawn (docs/design.md
// §14; docs/decisions.md, "Readings in"): the shape of the body is the
// request's, the values inside one item are that item's.
//
// 400 INVALID_BODY, nothing stored: not one JSON object; "readings"
// missing, null, not an array, empty or longer than MaxReadings; an item
// that is not a JSON object (null included); an unknown or repeated key
// at any depth (an item's or its attributes' included: a key is never a
// value); a string anywhere that is not valid UTF-8, holds an unpaired
// surrogate escape or a NUL.
//
// INVALID_READING for that item alone, with the field: a field of the
// wrong JSON type ("speed": "fast"), missing (imei, time), out of range,
// lat without lon, an attribute value that is null, an object or an array
// (field "attributes.NAME"), too many attributes, a name or string too
// long. A null optional field is not reported, like an absent one.

// readingsBody is what decodeBody reads: the items stay raw, judged one by
// one (parseReading).
type readingsBody struct {
	Readings []json.RawMessage `json:"readings"`
}

// ReadingsInput is the body of POST /readings as the OpenAPI document
// shows it (the handler reads readingsBody).
type ReadingsInput struct {
	Readings []ReadingInput `json:"readings"`
}

// ReadingInput is one reading of POST /readings (docs/design.md §14).
type ReadingInput struct {
	IMEI        *string        `json:"imei"`
	Time        *string        `json:"time"`
	Lat         *float64       `json:"lat"`
	Lon         *float64       `json:"lon"`
	Speed       *float64       `json:"speed"`
	Heading     *float64       `json:"heading"`
	Altitude    *float64       `json:"altitude"`
	Odometer    *float64       `json:"odometer"`
	EngineHours *float64       `json:"engine_hours"`
	Ignition    *bool          `json:"ignition"`
	Attributes  map[string]any `json:"attributes"`
}

// ReadingsResult is the answer of POST /readings.
type ReadingsResult struct {
	Accepted   int                `json:"accepted"`
	Duplicates int                `json:"duplicates"`
	Rejected   []ReadingRejection `json:"rejected"`
}

// ReadingRejection is one item of the batch that was not stored.
type ReadingRejection struct {
	Index   int    `json:"index"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

// Bounds of a reading's fields.
const (
	maxSpeed          = 500
	maxHeading        = 360
	maxAttributes     = 32
	maxAttributeName  = 64
	maxAttributeText  = 256
	maxReadingIMEI    = 50
	maxReadingCounter = 1<<53 - 1 // odometer, engine hours: floor() must fit the bigint columns exactly
	readingFuture     = 5 * time.Minute
)

// readingFields are the keys an item takes, in the order they are judged.
var readingFields = []string{"imei", "time", "lat", "lon", "speed", "heading", "altitude", "odometer", "engine_hours", "ignition", "attributes"}

// parseReading judges item i of the batch: the reading, or its rejection,
// or a body fault (an *Error: the whole request is 400).
func parseReading(raw json.RawMessage, i int, now time.Time, retention time.Duration) (storage.Reading, *ReadingRejection, error) {
	var rd storage.Reading
	path := fmt.Sprintf("readings[%d]", i)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return rd, nil, invalidBody(path+" must be an object", map[string]any{"field": path})
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return rd, nil, invalidBody(path+" must be an object", map[string]any{"field": path})
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(readingFields, k) {
			return rd, nil, invalidBody(fmt.Sprintf("unknown field %q", path+"."+k), map[string]any{"field": path + "." + k})
		}
	}
	bad := func(field, message string) (storage.Reading, *ReadingRejection, error) {
		return storage.Reading{}, &ReadingRejection{Index: i, Code: CodeInvalidReading, Message: message, Field: field}, nil
	}
	// present: the field is there and not null.
	present := func(k string) bool { v, ok := m[k]; return ok && string(v) != "null" }
	if !present("imei") {
		return bad("imei", "imei is required")
	}
	if err := json.Unmarshal(m["imei"], &rd.IMEI); err != nil {
		return bad("imei", "imei must be a string")
	}
	if n := utf8.RuneCountInString(rd.IMEI); n < 1 || n > maxReadingIMEI {
		return bad("imei", fmt.Sprintf("imei must be 1 to %d characters", maxReadingIMEI))
	}
	if !present("time") {
		return bad("time", "time is required")
	}
	var ts string
	if err := json.Unmarshal(m["time"], &ts); err != nil {
		return bad("time", "time must be an RFC 3339 string")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return bad("time", "time must be an RFC 3339 date and time with a UTC offset")
	}
	rd.Time = t
	numbers := []struct {
		name   string
		dst    **float64
		lo, hi float64
		unit   string
	}{
		{"lat", &rd.Lat, -90, 90, "degrees"},
		{"lon", &rd.Lon, -180, 180, "degrees"},
		{"speed", &rd.Speed, 0, maxSpeed, "km/h"},
		{"heading", &rd.Heading, 0, maxHeading, "degrees"},
		{"altitude", &rd.Altitude, -maxReadingCounter, maxReadingCounter, "m"},
		{"odometer", &rd.Odometer, 0, maxReadingCounter, "km"},
		{"engine_hours", &rd.EngineHours, 0, maxReadingCounter, "h"},
	}
	for _, f := range numbers {
		if !present(f.name) {
			continue
		}
		var v float64
		if err := json.Unmarshal(m[f.name], &v); err != nil {
			return bad(f.name, f.name+" must be a number")
		}
		if v < f.lo || v > f.hi {
			return bad(f.name, fmt.Sprintf("%s must be between %g and %g (%s)", f.name, f.lo, f.hi, f.unit))
		}
		*f.dst = &v
	}
	if (rd.Lat == nil) != (rd.Lon == nil) {
		missing := "lon"
		if rd.Lat == nil {
			missing = "lat"
		}
		return bad(missing, "lat and lon come together: both or neither")
	}
	if present("ignition") {
		var b bool
		if err := json.Unmarshal(m["ignition"], &b); err != nil {
			return bad("ignition", "ignition must be a boolean")
		}
		rd.Ignition = &b
	}
	if present("attributes") {
		attrs, field, reason := parseAttributes(m["attributes"])
		if reason != "" {
			return bad(field, reason)
		}
		rd.Attributes = attrs
	}
	switch {
	case rd.Time.After(now.Add(readingFuture)):
		return storage.Reading{}, &ReadingRejection{Index: i, Code: CodeReadingInFuture, Field: "time",
			Message: "time is more than 5 minutes ahead of the server's clock"}, nil
	case rd.Time.Before(now.Add(-retention)):
		return storage.Reading{}, &ReadingRejection{Index: i, Code: CodeReadingTooOld, Field: "time",
			Message: fmt.Sprintf("time is older than the positions retention (%s)", retention)}, nil
	}
	return rd, nil, nil
}

// parseAttributes reads an item's attributes: an object of at most
// maxAttributes names of 1 to maxAttributeName characters, each value a
// number, a boolean or a string of at most maxAttributeText characters. A
// fault names its field ("attributes", "attributes.door").
func parseAttributes(raw json.RawMessage) (attrs map[string]any, field, reason string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "attributes", "attributes must be an object"
	}
	if len(m) > maxAttributes {
		return nil, "attributes", fmt.Sprintf("at most %d attributes, not %d", maxAttributes, len(m))
	}
	attrs = make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		field := "attributes." + k
		if n := utf8.RuneCountInString(k); n < 1 || n > maxAttributeName {
			return nil, "attributes", fmt.Sprintf("an attribute name is 1 to %d characters", maxAttributeName)
		}
		v := bytes.TrimSpace(m[k])
		const kinds = "must be a number, a boolean or a string"
		if len(v) == 0 {
			return nil, field, field + " " + kinds
		}
		switch v[0] {
		case '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, field, field + " " + kinds
			}
			if utf8.RuneCountInString(s) > maxAttributeText {
				return nil, field, fmt.Sprintf("%s is at most %d characters", field, maxAttributeText)
			}
			attrs[k] = s
		case 't', 'f':
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return nil, field, field + " " + kinds
			}
			attrs[k] = b
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				return nil, field, field + " must be a finite number"
			}
			attrs[k] = f
		default: // null, an object, an array
			return nil, field, field + " " + kinds
		}
	}
	return attrs, "", ""
}

// readingsInputSchema is the ReadingsInput component, the request body.
func readingsInputSchema() wireType {
	return wireType{name: "ReadingsInput", value: ReadingsInput{}, required: []string{"readings"},
		description: "A batch of readings (docs/design.md §14). Field names are exact; unknown and repeated keys are 400, " +
			"like text that is not valid UTF-8. Each item is judged on its own (the answer's rejected list).",
		uses: []wireType{readingInputSchema()},
		fields: map[string][]fieldOpt{
			"readings": {minItemsOne(), maxItems(MaxReadings), notNull(), desc("1 to 1000 readings."),
				schemaOpt(func(s *openapi3.Schema) { s.Items = componentRef("ReadingInput") })},
		}}
}

// readingInputSchema is the ReadingInput component.
func readingInputSchema() wireType {
	return wireType{name: "ReadingInput", value: ReadingInput{}, required: []string{"imei", "time"},
		description: "One reading of a device. A null optional field is not reported, like an absent one.",
		fields: map[string][]fieldOpt{
			"imei":         {typed(openapi3.TypeString), minLen(1), maxLen(maxReadingIMEI), desc("Required: the device's IMEI.")},
			"time":         {typed(openapi3.TypeString), format("date-time"), desc("Required: RFC 3339; at most 5 minutes ahead of the server's clock, not older than the positions retention.")},
			"lat":          {minimum(-90), maximum(90), desc("Latitude (degrees); with lon.")},
			"lon":          {minimum(-180), maximum(180), desc("Longitude (degrees); with lat.")},
			"speed":        {minimum(0), maximum(maxSpeed), desc("Speed (km/h).")},
			"heading":      {minimum(0), maximum(maxHeading), desc("Heading (degrees).")},
			"altitude":     {minimum(-maxReadingCounter), maximum(maxReadingCounter), desc("Altitude (m).")},
			"odometer":     {minimum(0), maximum(maxReadingCounter), desc("Odometer (km); the device's odometer takes its whole part.")},
			"engine_hours": {minimum(0), maximum(maxReadingCounter), desc("Engine hours (h); the device's engine hours take the whole part.")},
			"ignition":     {desc("Ignition on.")},
			"attributes": {freeObject(), desc("At most 32 names of 1 to 64 characters; each value a number, a boolean or a string of at most 256 characters " +
				"(for example sos, door, fuel, temp1).")},
		}}
}

// readingsResultSchema is the ReadingsResult component.
func readingsResultSchema() wireType {
	return wireType{name: "ReadingsResult", value: ReadingsResult{}, uses: []wireType{readingRejectionSchema()},
		description: "What became of a batch: accepted (stored now), duplicates (stored before, or twice in the batch) and the rejected items.",
		fields: map[string][]fieldOpt{
			"accepted":   {minimum(0), desc("Readings stored by this request.")},
			"duplicates": {minimum(0), desc("Readings whose imei and time were stored before (or earlier in the batch): nothing stored twice.")},
			"rejected": {desc("The items not stored, by index."),
				schemaOpt(func(s *openapi3.Schema) { s.Items = componentRef("ReadingRejection") })},
		}}
}

// readingRejectionSchema is the ReadingRejection component.
func readingRejectionSchema() wireType {
	return wireType{name: "ReadingRejection", value: ReadingRejection{}, description: "An item of the batch that was not stored.",
		fields: map[string][]fieldOpt{
			"index":   {minimum(0), desc("Index of the item in readings.")},
			"code":    {enum(CodeUnknownDevice, CodeInvalidReading, CodeReadingInFuture, CodeReadingTooOld), desc("Why.")},
			"message": {desc("For people.")},
			"field":   {desc("The field at fault (attributes.NAME for an attribute).")},
		}}
}

func exampleReadingsInput() ReadingsInput {
	return ReadingsInput{Readings: []ReadingInput{{IMEI: ptr("356938035643809"), Time: ptr("2027-03-01T08:15:00Z"),
		Lat: ptr(38.7223), Lon: ptr(-9.1393), Speed: ptr(87.5), Heading: ptr(270.0), Ignition: ptr(true),
		Odometer: ptr(120351.4), Attributes: map[string]any{"fuel": 61.5, "door": false}}}}
}

func exampleReadingsResult() ReadingsResult {
	return ReadingsResult{Accepted: 1, Duplicates: 0, Rejected: []ReadingRejection{
		{Index: 1, Code: CodeUnknownDevice, Message: unknownDeviceMessage, Field: "imei"}}}
}
