package ops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads the replica's /metrics.
func scrape(ctx context.Context, c *http.Client, base string) ([]sample, error) {
	res := send(ctx, c, base, call{method: http.MethodGet, path: "/metrics"})
	if res.Err != nil {
		return nil, res.Err
	}
	if res.Status != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %d", res.Status)
	}
	var out []sample
	sc := bufio.NewScanner(bytes.NewReader(res.body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if s, ok := parseSample(line); ok {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// parseSample parses `name{a="x",b="y"} value`.
func parseSample(line string) (sample, bool) {
	s := sample{labels: map[string]string{}}
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		s.name = line[:i]
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return s, false
		}
		body := line[i+1 : j]
		rest = strings.TrimSpace(line[j+1:])
		for body != "" {
			eq := strings.IndexByte(body, '=')
			if eq < 0 || eq+1 >= len(body) || body[eq+1] != '"' {
				return s, false
			}
			key := body[:eq]
			k := eq + 2
			var val strings.Builder
			for k < len(body) && body[k] != '"' {
				if body[k] == '\\' && k+1 < len(body) {
					k++
				}
				val.WriteByte(body[k])
				k++
			}
			s.labels[key] = val.String()
			body = strings.TrimPrefix(body[min(k+1, len(body)):], ",")
		}
	} else {
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			return s, false
		}
		s.name, rest = name, v
	}
	v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// sumOf adds the values of the samples called name whose labels include
// match.
func sumOf(samples []sample, name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range samples {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// queryCount is how many SQL statements the replica ran (bun's
// go.sql.query_timing histogram, every table and operation).
func queryCount(ctx context.Context, c *http.Client, base string) (float64, error) {
	s, err := scrape(ctx, c, base)
	if err != nil {
		return 0, err
	}
	return sumOf(s, "go_sql_query_timing_milliseconds_count", nil), nil
}

// dbTransactions reads pg_stat_database's committed plus rolled-back
// transactions of database name, after waiting for the server's backends
// to flush their statistics (PostgreSQL 15 flushes a busy backend's at
// most once a second, an idle one's within 10 s).
func dbTransactions(ctx context.Context, adminURL, name string) (int64, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(11 * time.Second):
	}
	db := storage.Open(adminURL, storage.Options{MaxOpenConns: 1})
	defer db.Close()
	var n int64
	err := db.NewRaw("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = ?", name).Scan(ctx, &n)
	return n, err
}
