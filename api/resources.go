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
	if err != nil || len(s.Extra) == 0 {
		return named, err
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(named, &merged); err != nil {
		return nil, err
	}
	for k, v := range s.Extra {
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
