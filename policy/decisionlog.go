package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// DecisionRecord is one line of the decision log (DESIGN §6). It holds the
// caller's ids and the outcome, never a token secret (Input has none).
type DecisionRecord struct {
	DecisionID  string `json:"decision_id"`
	Time        string `json:"time"`
	TraceID     string `json:"trace_id"`
	Route       string `json:"route"`
	TokenID     int64  `json:"token_id"`
	AccountID   int64  `json:"account_id"`
	AccountType string `json:"account_type"`
	Allow       bool   `json:"allow"`
	Code        string `json:"code"`
	Revision    string `json:"revision"`
	EvalNS      int64  `json:"eval_ns"`
	Cached      bool   `json:"cached"`
	// Action, TargetAccountID and Reason are set for a management decision
	// (DecideManagement), whose Route is empty: the management action, the
	// account acted on (0: none, an account created at the top) and the
	// denial's details.reason.
	Action          string `json:"action,omitempty"`
	TargetAccountID int64  `json:"target_account_id,omitempty"`
	Reason          string `json:"reason,omitempty"`
	// Error is set when no decision could be made (Code is POLICY_ERROR).
	Error string `json:"error,omitempty"`
}

// logDecision writes one JSON line for a Decide call. Lines are written
// whole under a lock; a write error is dropped (the request is not failed
// for it).
func (e *snapshot) logDecision(ctx context.Context, in Input, d Decision, elapsed time.Duration, cached bool, evalErr error) {
	if e.log == nil {
		return
	}
	e.writeRecord(e.newRecord(ctx, in, d, elapsed, cached, evalErr))
}

// newRecord is the decision log record of one decision on in.
func (e *snapshot) newRecord(ctx context.Context, in Input, d Decision, elapsed time.Duration, cached bool, evalErr error) DecisionRecord {
	rec := DecisionRecord{
		DecisionID:  newDecisionID(),
		Time:        time.Now().UTC().Format(time.RFC3339Nano),
		Route:       in.Request.Method + " " + in.Request.Route,
		TokenID:     in.Token.ID,
		AccountID:   in.Account.ID,
		AccountType: in.Account.Type,
		Allow:       d.Allow,
		Code:        d.Code,
		Revision:    e.revision,
		EvalNS:      elapsed.Nanoseconds(),
		Cached:      cached,
	}
	if d.Allow {
		rec.Code = "ALLOW"
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		rec.TraceID = sc.TraceID().String()
	}
	if evalErr != nil {
		rec.Error = evalErr.Error()
	}
	return rec
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

// newDecisionID returns 16 random bytes in hex.
func newDecisionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
