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
	data, size, ok := directData(e.Data)
	if !ok {
		return b, false, nil
	}
	b = slices.Grow(b, 128+size)
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, e.Success)
	b = append(b, `,"data":`...)
	b, err := data(b)
	if err != nil {
		return nil, true, err
	}
	b = append(b, `,"meta":`...)
	b = appendMeta(b, &e.Meta)
	return append(b, "}\n"...), true, nil
}

// directData is the writer of data when its type is one written by hand,
// with about the size it writes; false for other types.
func directData(data any) (write func([]byte) ([]byte, error), size int, ok bool) {
	switch d := data.(type) {
	case Event:
		return func(b []byte) ([]byte, error) { return appendEvent(b, &d) }, itemBytes, true
	case []Event:
		return func(b []byte) ([]byte, error) { return appendItems(b, d, appendEvent) }, len(d) * itemBytes, true
	case []Service:
		return func(b []byte) ([]byte, error) { return appendItems(b, d, appendService) }, len(d) * itemBytes, true
	case []DueService:
		return func(b []byte) ([]byte, error) { return appendItems(b, d, appendDueService) }, len(d) * itemBytes, true
	case Account:
		return func(b []byte) ([]byte, error) { return appendAccount(b, &d), nil }, 64 * (len(d.Permissions.Routes) + 4), true
	}
	return nil, 0, false
}

// appendItems writes a list of items, each with write (null for a nil
// list).
func appendItems[T any](b []byte, items []T, write func([]byte, *T) ([]byte, error)) ([]byte, error) {
	if items == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	var err error
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = write(b, &items[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendService writes a service record as its MarshalJSON does; through
// MarshalJSON every record went through encoding/json's reflection: a
// tenth of a 50-record page's server CPU and a quarter of a 500-record due
// page's.
func appendService(b []byte, s *Service) ([]byte, error) { return appendRecord(b, &s.Service, nil) }

// appendDueService writes a due record as its MarshalJSON does.
func appendDueService(b []byte, d *DueService) ([]byte, error) {
	return appendRecord(b, &d.Service, d)
}

// appendRecord writes a service record's named fields as json.Marshal
// writes them (HTML characters escaped in strings), then due's fields when
// it is not nil, then the record's extra properties merged in as
// mergeExtra does (never over a named field).
func appendRecord(b []byte, s *storage.Service, due *DueService) ([]byte, error) {
	named := func(b []byte) []byte {
		b = appendServiceFields(b, s)
		if due != nil {
			b = appendDueFields(b, due)
		}
		return append(b, '}')
	}
	if len(s.Extra) == 0 {
		return named(b), nil
	}
	merged, err := mergeExtra(named(nil), s.Extra)
	if err != nil {
		return nil, err
	}
	return append(b, merged...), nil
}

// appendServiceFields writes the named fields of a service record in the
// struct's order, without the closing brace.
func appendServiceFields(b []byte, s *storage.Service) []byte {
	b = appendIntField(b, `{"service_id":`, s.ServiceID)
	b = appendStringHTML(append(b, `,"imei":`...), s.IMEI, true)
	b = appendStringHTML(append(b, `,"name":`...), s.Name, true)
	b = appendBoolField(b, `,"odo":`, s.Odo)
	b = appendIntField(b, `,"odo_interval":`, int64(s.OdoInterval))
	b = appendIntField(b, `,"odo_last":`, int64(s.OdoLast))
	b = appendBoolField(b, `,"engh":`, s.Engh)
	b = appendIntField(b, `,"engh_interval":`, int64(s.EnghInterval))
	b = appendIntField(b, `,"engh_last":`, int64(s.EnghLast))
	b = appendBoolField(b, `,"days":`, s.Days)
	b = appendIntField(b, `,"days_interval":`, int64(s.DaysInterval))
	b = append(b, `,"days_last":`...)
	if s.DaysLast == nil {
		b = append(b, "null"...)
	} else {
		// Date.MarshalJSON is json.Marshal(String()): digits and '-', which
		// need no escaping.
		b = append(s.DaysLast.AppendFormat(append(b, '"'), storage.DateLayout), '"')
	}
	b = appendBoolField(b, `,"odo_left":`, s.OdoLeft)
	b = appendIntField(b, `,"odo_left_num":`, int64(s.OdoLeftNum))
	b = appendBoolField(b, `,"engh_left":`, s.EnghLeft)
	b = appendIntField(b, `,"engh_left_num":`, int64(s.EnghLeftNum))
	b = appendBoolField(b, `,"days_left":`, s.DaysLeft)
	b = appendIntField(b, `,"days_left_num":`, int64(s.DaysLeftNum))
	b = appendBoolField(b, `,"update_last":`, s.UpdateLast)
	return appendBoolField(b, `,"notify_service_expire":`, s.NotifyServiceExpire)
}

// appendDueFields writes the due fields of d after its service's fields
// (dueServiceJSON's order), without the closing brace.
func appendDueFields(b []byte, d *DueService) []byte {
	b = appendStringHTML(append(b, `,"object_name":`...), d.ObjectName, true)
	b = appendOptionalInt(append(b, `,"odo_remaining":`...), d.OdoRemaining)
	b = appendOptionalInt(append(b, `,"engh_remaining":`...), d.EnghRemaining)
	b = appendOptionalInt(append(b, `,"days_remaining":`...), d.DaysRemaining)
	b = appendListField(b, `,"due":`, d.Due)
	return appendStringHTML(append(b, `,"state":`...), d.State, true)
}

// appendOptionalInt writes *v, or null.
func appendOptionalInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

// appendMeta writes m as encoding/json does (the paging fields inline).
func appendMeta(b []byte, m *Meta) []byte {
	b = appendStringField(b, `{"request_id":`, m.RequestID)
	if p := m.Paging; p != nil {
		b = appendIntField(b, `,"page":`, int64(p.Page))
		b = appendIntField(b, `,"per_page":`, int64(p.PerPage))
		b = appendIntField(b, `,"total":`, p.Total)
		b = appendIntField(b, `,"pages":`, p.Pages)
		if p.Next != "" {
			b = appendStringField(b, `,"next":`, p.Next)
		}
	}
	return append(b, '}')
}

// appendEvent writes an event rule as encoding/json does, fields in the
// struct's order, the computed evaluable and reason last.
func appendEvent(b []byte, w *Event) ([]byte, error) {
	ev := &w.Event
	b = appendIntField(b, `{"event_id":`, ev.EventID)
	b = appendStringField(b, `,"type":`, ev.Type)
	b = appendStringField(b, `,"name":`, ev.Name)
	b = appendBoolField(b, `,"active":`, ev.Active)
	b = appendListField(b, `,"week_days":`, ev.WeekDays)
	b = append(b, `,"day_time":`...)
	b, err := appendObject(b, ev.DayTime)
	if err != nil {
		return nil, err
	}
	b = appendListField(b, `,"imei":`, ev.IMEI)
	b = appendStringField(b, `,"checked_value":`, ev.CheckedValue)
	b = appendStringField(b, `,"route_trigger":`, ev.RouteTrigger)
	b = appendStringField(b, `,"zone_trigger":`, ev.ZoneTrigger)
	b = appendListField(b, `,"routes":`, ev.Routes)
	b = appendListField(b, `,"zones":`, ev.Zones)
	b = appendBoolField(b, `,"notify_system":`, ev.NotifySystem)
	b = appendBoolField(b, `,"notify_email":`, ev.NotifyEmail)
	b = appendStringField(b, `,"notify_email_address":`, ev.NotifyEmailAddress)
	b = appendBoolField(b, `,"notify_sms":`, ev.NotifySMS)
	b = appendStringField(b, `,"notify_sms_number":`, ev.NotifySMSNumber)
	b = appendBoolField(b, `,"notify_telegram":`, ev.NotifyTelegram)
	b = appendIntField(b, `,"email_template_id":`, ev.EmailTemplateID)
	b = appendIntField(b, `,"sms_template_id":`, ev.SMSTemplateID)
	b = appendBoolField(b, `,"cmd_send":`, ev.CmdSend)
	b = appendStringField(b, `,"cmd_gateway":`, ev.CmdGateway)
	b = appendStringField(b, `,"cmd_type":`, ev.CmdType)
	b = appendStringField(b, `,"cmd_string":`, ev.CmdString)
	b = appendBoolField(b, `,"evaluable":`, w.Evaluable)
	b = appendStringField(b, `,"reason":`, w.Reason)
	return append(b, '}'), nil
}

// appendAccount writes the account of GET /me as json.Encoder would: the
// fields in declaration order, nil lists and maps as null, and the routes
// object's keys in sorted order (encoding/json sorts map keys; through it,
// the reflection over the routes map was the largest part of /me's
// encoding).
func appendAccount(b []byte, a *Account) []byte {
	b = appendIntField(b, `{"id":`, a.ID)
	b = appendStringField(b, `,"username":`, a.Username)
	b = appendStringField(b, `,"email":`, a.Email)
	b = appendIntField(b, `,"manager_id":`, a.ManagerID)
	b = appendStringField(b, `,"type":`, a.Type)
	b = appendStringField(b, `,"active":`, a.Active)
	b = appendStringField(b, `,"account_expire":`, a.AccountExpire)
	b = appendStringField(b, `,"account_expire_dt":`, a.AccountExpireDt)
	b = appendStringField(b, `,"timezone":`, a.Timezone)
	p := &a.Permissions
	b = appendBoolField(b, `,"permissions":{"read_only":`, p.ReadOnly)
	b = appendStrings(append(b, `,"privileges":`...), p.Privileges)
	b = appendStrings(append(b, `,"token":`...), p.Token)
	b = append(b, `,"routes":`...)
	if p.Routes == nil {
		b = append(b, "null"...)
	} else {
		keys := make([]string, 0, len(p.Routes))
		for k := range p.Routes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendBool(append(appendString(b, k), ':'), p.Routes[k])
		}
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// appendStrings writes a []string as json.Encoder without HTML escaping
// does (nil is null).
func appendStrings(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendStringField writes the key (with its leading '{' or ',') and
// the string v; appendBoolField, appendIntField and appendListField the
// same for a boolean, an integer and a string list.
func appendStringField(b []byte, key string, v string) []byte {
	return appendString(append(b, key...), v)
}

// appendBoolField: see appendStringField.
func appendBoolField(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(append(b, key...), v)
}

// appendIntField: see appendStringField.
func appendIntField(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendListField: see appendStringField.
func appendListField(b []byte, key string, v storage.StringList) []byte {
	return appendStringList(append(b, key...), v)
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
