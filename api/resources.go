package api

import (
	"encoding/json"

	"github.com/fleetapi/fleetapi/storage"
)

// Service is the wire form of a maintenance service record (spec §2.3,
// DESIGN §5): the named fields, with the record's extra properties merged in
// without overriding them.
type Service struct {
	storage.Service
}

// MarshalJSON encodes the named fields and merges the extra properties.
func (s Service) MarshalJSON() ([]byte, error) {
	named, err := json.Marshal(s.Service)
	if err != nil {
		return nil, err
	}
	return mergeExtra(named, s.Extra)
}

// DueService is the wire form of a due maintenance record (DESIGN §5): the
// service record, extra properties included, plus the due fields.
type DueService struct {
	storage.DueService
}

// MarshalJSON encodes the named and due fields and merges the extra
// properties.
func (d DueService) MarshalJSON() ([]byte, error) {
	named, err := json.Marshal(d.DueService)
	if err != nil {
		return nil, err
	}
	return mergeExtra(named, d.Extra)
}

func dueServices(rows []storage.DueService) []DueService {
	out := make([]DueService, len(rows))
	for i, r := range rows {
		out[i] = DueService{r}
	}
	return out
}

// mergeExtra adds a record's extra properties to its encoded named fields;
// a named field is never overridden.
func mergeExtra(named []byte, extra map[string]any) ([]byte, error) {
	if len(extra) == 0 {
		return named, nil
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(named, &merged); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, taken := merged[k]; taken {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		merged[k] = b
	}
	return json.Marshal(merged)
}

func services(rows []storage.Service) []Service {
	out := make([]Service, len(rows))
	for i, r := range rows {
		out[i] = Service{r}
	}
	return out
}
