package policy_test

import (
	"context"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// TestScopeRulesAreStorageResources: the embedded policy's scope rules
// and storage's registry name the same resources (New checks both
// directions: a resource without a rule, a rule without a resource).
func TestScopeRulesAreStorageResources(t *testing.T) {
	if _, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()}); err != nil {
		t.Fatalf("the scope rules and storage.Resources() disagree: %v", err)
	}
}
