package api

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/fleetapi/fleetapi/storage"
)

// itemBytes is about the encoded size of one service record, to size the
// response buffer once.
const itemBytes = 640

// appendJSON writes a list envelope of service records by hand, in exactly
// the bytes encoding/json would write (one trailing newline, as
// json.Encoder). Through encoding/json, each item's MarshalJSON output is
// validated and copied again by the encoder (appendCompact): for the 500
// records of /services/due that pass was most of the response's CPU time.
// Single event rules (GET /events/{id}) are written by hand too: through
// encoding/json their four lists each went through json.Marshal and back
// through the encoder's validation. It reports false for data of other
// types, which take the ordinary path.
func (e *Envelope[T]) appendJSON(b []byte) ([]byte, bool, error) {
	if ev, ok := any(e.Data).(storage.Event); ok {
		b = slices.Grow(b, 128+itemBytes)
		b = append(b, `{"success":`...)
		b = strconv.AppendBool(b, e.Success)
		b = append(b, `,"data":`...)
		b, err := appendEvent(b, &ev)
		if err != nil {
			return nil, true, err
		}
		b = append(b, `,"meta":`...)
		b = appendMeta(b, &e.Meta)
		return append(b, "}\n"...), true, nil
	}
	var (
		n     int
		isNil bool
		item  func(int) ([]byte, error)
	)
	switch d := any(e.Data).(type) {
	case []Service:
		n, isNil, item = len(d), d == nil, func(i int) ([]byte, error) { return d[i].MarshalJSON() }
	case []DueService:
		n, isNil, item = len(d), d == nil, func(i int) ([]byte, error) { return d[i].MarshalJSON() }
	default:
		return b, false, nil
	}
	b = slices.Grow(b, 128+n*itemBytes)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, e.Success)
	b = append(b, `,"data":`...)
	if isNil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			j, err := item(i)
			if err != nil {
				return nil, true, err
			}
			b = append(b, j...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"meta":`...)
	b = appendMeta(b, &e.Meta)
	return append(b, "}\n"...), true, nil
}

// appendMeta writes m as encoding/json does (the paging fields inline).
func appendMeta(b []byte, m *Meta) []byte {
	b = append(b, `{"request_id":`...)
	b = appendString(b, m.RequestID)
	if p := m.Paging; p != nil {
		b = append(b, `,"page":`...)
		b = strconv.AppendInt(b, int64(p.Page), 10)
		b = append(b, `,"per_page":`...)
		b = strconv.AppendInt(b, int64(p.PerPage), 10)
		b = append(b, `,"total":`...)
		b = strconv.AppendInt(b, p.Total, 10)
		b = append(b, `,"pages":`...)
		b = strconv.AppendInt(b, p.Pages, 10)
	}
	return append(b, '}')
}

// appendEvent writes an event rule as encoding/json does, fields in the
// struct's order.
func appendEvent(b []byte, ev *storage.Event) ([]byte, error) {
	b = append(b, `{"event_id":`...)
	b = strconv.AppendInt(b, ev.EventID, 10)
	b = append(b, `,"type":`...)
	b = appendString(b, ev.Type)
	b = append(b, `,"name":`...)
	b = appendString(b, ev.Name)
	b = append(b, `,"active":`...)
	b = strconv.AppendBool(b, ev.Active)
	b = append(b, `,"week_days":`...)
	b = appendStringList(b, ev.WeekDays)
	b = append(b, `,"day_time":`...)
	b, err := appendObject(b, ev.DayTime)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"imei":`...)
	b = appendStringList(b, ev.IMEI)
	b = append(b, `,"checked_value":`...)
	b = appendString(b, ev.CheckedValue)
	b = append(b, `,"route_trigger":`...)
	b = appendString(b, ev.RouteTrigger)
	b = append(b, `,"zone_trigger":`...)
	b = appendString(b, ev.ZoneTrigger)
	b = append(b, `,"routes":`...)
	b = appendStringList(b, ev.Routes)
	b = append(b, `,"zones":`...)
	b = appendStringList(b, ev.Zones)
	b = append(b, `,"notify_system":`...)
	b = strconv.AppendBool(b, ev.NotifySystem)
	b = append(b, `,"notify_email":`...)
	b = strconv.AppendBool(b, ev.NotifyEmail)
	b = append(b, `,"notify_email_address":`...)
	b = appendString(b, ev.NotifyEmailAddress)
	b = append(b, `,"notify_sms":`...)
	b = strconv.AppendBool(b, ev.NotifySMS)
	b = append(b, `,"notify_sms_number":`...)
	b = appendString(b, ev.NotifySMSNumber)
	b = append(b, `,"notify_telegram":`...)
	b = strconv.AppendBool(b, ev.NotifyTelegram)
	b = append(b, `,"email_template_id":`...)
	b = strconv.AppendInt(b, ev.EmailTemplateID, 10)
	b = append(b, `,"sms_template_id":`...)
	b = strconv.AppendInt(b, ev.SMSTemplateID, 10)
	b = append(b, `,"cmd_send":`...)
	b = strconv.AppendBool(b, ev.CmdSend)
	b = append(b, `,"cmd_gateway":`...)
	b = appendString(b, ev.CmdGateway)
	b = append(b, `,"cmd_type":`...)
	b = appendString(b, ev.CmdType)
	b = append(b, `,"cmd_string":`...)
	b = appendString(b, ev.CmdString)
	return append(b, '}'), nil
}

// appendStringList writes l as StringList.MarshalJSON does (nil is [];
// json.Marshal escapes <, > and & in the items, and the encoder keeps
// those escapes).
func appendStringList(b []byte, l storage.StringList) []byte {
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStringHTML(b, s, true)
	}
	return append(b, ']')
}

// appendObject writes o as JSONObject.MarshalJSON does; the empty object,
// which most rows hold, without encoding/json.
func appendObject(b []byte, o storage.JSONObject) ([]byte, error) {
	if len(o) == 0 {
		return append(b, "{}"...), nil
	}
	// MarshalJSON's bytes, as the encoder copies them (HTML escapes
	// included: json.Marshal makes them and the encoder keeps them).
	j, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string exactly as encoding/json does
// without HTML escaping: \" and \\, the short escapes \b \f \n \r \t,
// other control characters as \u00XX, invalid UTF-8 as \ufffd, and U+2028
// and U+2029 escaped (encoding/json's appendString).
func appendString(b []byte, s string) []byte { return appendStringHTML(b, s, false) }

// appendStringHTML is appendString that, with html, also escapes <, > and
// & as \u003c, \u003e and \u0026 (json.Marshal's escaping).
func appendStringHTML(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
