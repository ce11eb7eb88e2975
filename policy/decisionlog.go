package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/open-policy-agent/opa/v1/version"
	"go.opentelemetry.io/otel/trace"
)

// Decision log paths: the rule each record is the decision of, in OPA's
// form (the data path without "data.", slash-separated).
const (
	DecisionPath           = "fleet/authz/decision"
	ManagementDecisionPath = "fleet/manage/decision"
)

// BundleName is the name under which a record's bundles field carries
// the policy revision: {"fleet": {"revision": ...}}.
const BundleName = "fleet"

// DecisionRecord is one line of the decision log (docs/design.md §6, §10): an OPA
// decision-log event (the fields of OPA's logs plugin EventV1: labels,
// decision_id, trace_id, span_id, revision, bundles, path, input, result,
// erased, timestamp, metrics.timer_rego_query_eval_ns, custom), so that
// tools that read OPA's decision logs read fleetapi's. fleetapi's own
// fields (route, token_id, account_id, account_type, allow, code, cached,
// and for a management decision action, target_account_id, reason) are
// under custom, where OPA puts the fields a deployment adds to its events,
// so that no name of fleetapi's can collide with one OPA adds later.
// The input is the policy input with secrets and personal data removed:
// it holds ids, types, flags, permissions and privileges, never a token
// secret or hash, a username, an email or a name (redactedManagementInput
// erases those fields of a management change and lists them in Erased).
type DecisionRecord struct {
	// Labels identify the writer as OPA's labels do: "id", the instance
	// (one random UUID per Engine, so per process), and "version", the
	// version of the OPA library that decided, plus
	// Options.DecisionLogLabels.
	Labels     map[string]string `json:"labels"`
	DecisionID string            `json:"decision_id"`
	// Timestamp is the time of the decision, RFC 3339 with nanoseconds.
	Timestamp string `json:"timestamp"`
	TraceID   string `json:"trace_id"`
	SpanID    string `json:"span_id,omitempty"`
	// Path is the decision's rule (DecisionPath, ManagementDecisionPath).
	Path string `json:"path"`
	// Revision is the policy revision that decided; Bundles carries it
	// under BundleName as OPA names a bundle's revision.
	Revision string                    `json:"revision"`
	Bundles  map[string]BundleRevision `json:"bundles"`
	Input    any                       `json:"input"`
	// Result is the decision document; absent when no decision could be
	// made (EvalError).
	Result  *Decision       `json:"result,omitempty"`
	Erased  []string        `json:"erased,omitempty"`
	Metrics DecisionMetrics `json:"metrics"`
	// Custom are fleetapi's own fields.
	Custom DecisionCustom `json:"custom"`
}

// DecisionCustom are fleetapi's own fields of a decision record, under
// its "custom" key (docs/design.md §6).
type DecisionCustom struct {
	// Route is "METHOD /template" of a route decision, "" for a
	// management decision.
	Route       string `json:"route"`
	TokenID     int64  `json:"token_id"`
	AccountID   int64  `json:"account_id"`
	AccountType string `json:"account_type"`
	Allow       bool   `json:"allow"`
	Code        string `json:"code"`
	Cached      bool   `json:"cached"`
	// Action, TargetAccountID and Reason are set for a management decision
	// (DecideManagement), whose Route is empty: the management action, the
	// account acted on (0: none, an account created at the top) and the
	// denial's details.reason.
	Action          string `json:"action,omitempty"`
	TargetAccountID int64  `json:"target_account_id,omitempty"`
	Reason          string `json:"reason,omitempty"`
	// EvalError is set when no decision could be made (Code is
	// POLICY_ERROR). It is not OPA's "error" field, whose form differs.
	EvalError string `json:"eval_error,omitempty"`
}

// BundleRevision is the revision of a bundle in a record's bundles.
type BundleRevision struct {
	Revision string `json:"revision"`
}

// DecisionMetrics are a record's metrics, named as OPA names them.
type DecisionMetrics struct {
	// TimerRegoQueryEvalNS is the evaluation time in nanoseconds (a cache
	// hit included).
	TimerRegoQueryEvalNS int64 `json:"timer_rego_query_eval_ns"`
}

// logDecision writes one JSON line for a Decide call. Lines are written
// whole under a lock; a write error is dropped (the request is not failed
// for it).
func (e *snapshot) logDecision(ctx context.Context, in Input, d Decision, elapsed time.Duration, cached bool, evalErr error) {
	if e.log == nil {
		return
	}
	rec := e.newRecord(ctx, in.Token.ID, in.Account, d, elapsed, evalErr)
	rec.Path = DecisionPath
	rec.Custom.Route = in.Request.Method + " " + in.Request.Route
	rec.Input = in
	rec.Custom.Cached = cached
	e.writeRecord(rec)
}

// newRecord is the decision log record of one decision of the caller
// (token, account), without its path, route and input.
func (e *snapshot) newRecord(ctx context.Context, tokenID int64, account AccountInput, d Decision, elapsed time.Duration, evalErr error) DecisionRecord {
	rec := DecisionRecord{
		Labels:     e.labels,
		DecisionID: newDecisionID(),
		Timestamp:  time.Now().UTC().Format(time.RFC3339Nano),
		Revision:   e.revision,
		Bundles:    map[string]BundleRevision{BundleName: {Revision: e.revision}},
		Metrics:    DecisionMetrics{TimerRegoQueryEvalNS: elapsed.Nanoseconds()},
		Custom: DecisionCustom{
			TokenID:     tokenID,
			AccountID:   account.ID,
			AccountType: account.Type,
			Allow:       d.Allow,
			Code:        d.Code,
		},
	}
	if d.Allow {
		rec.Custom.Code = "ALLOW"
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		rec.TraceID = sc.TraceID().String()
		if sc.HasSpanID() {
			rec.SpanID = sc.SpanID().String()
		}
	}
	if evalErr != nil {
		rec.Custom.EvalError = evalErr.Error()
	} else {
		result := cloneDecision(d)
		rec.Result = &result
	}
	return rec
}

// keptChangeFields are the fields of a management change that the
// decision log keeps: ids, types, flags, dates, permissions, privileges
// devices and quotas. Any other (username, email, a token's or a device's name,
// a field added later) is erased.
var keptChangeFields = map[string]bool{
	"type": true, "manager_id": true, "active": true, "read_only": true, "privileges": true,
	"account_expire": true, "expire_date": true, "account_id": true, "permissions": true,
	"expires_at": true, "rate_limit": true, "imei": true, "token_id": true,
	"quotas": true,
}

// redactedManagementInput is the management input as the decision log
// holds it: the change keeps keptChangeFields only; the erased fields are
// returned as OPA lists them ("/input/change/<field>", sorted).
func redactedManagementInput(in ManagementInput) (ManagementInput, []string) {
	var erased []string
	change := make(map[string]any, len(in.Change))
	for k, v := range in.Change {
		if keptChangeFields[k] {
			change[k] = v
		} else {
			erased = append(erased, "/input/change/"+k)
		}
	}
	sort.Strings(erased)
	in.Change = change
	return in, erased
}

// writeRecord writes rec as one JSON line.
func (e *snapshot) writeRecord(rec DecisionRecord) {
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	line = append(line, '\n')
	e.logMu.Lock()
	defer e.logMu.Unlock()
	_, _ = e.log.Write(line)
}

// decisionLogLabels are the labels of an engine's records: extra, and
// "id" (a new random UUID, as OPA names its instance) and "version" (the
// OPA library's version, as OPA writes its own), which extra may not set.
func decisionLogLabels(extra map[string]string) (map[string]string, error) {
	labels := map[string]string{}
	for k, v := range extra {
		if k == "id" || k == "version" {
			return nil, fmt.Errorf("policy: decision log label %q is fleetapi's own (the instance id and the OPA version)", k)
		}
		labels[k] = v
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	labels["id"] = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	labels["version"] = version.Version
	return labels, nil
}

// newDecisionID returns 16 random bytes in hex.
func newDecisionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
