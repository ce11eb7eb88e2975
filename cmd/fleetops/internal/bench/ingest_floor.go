package bench

import (
	"context"
	"fmt"
)

// floorPost is the ingest workload's floor: each batch through the storage
// entry point POST /readings calls, with the scope the policy engine
// compiles for the gateway's principal, without HTTP, authentication,
// policy or JSON.
func (h *harness) floorPost(context.Context, []*gateway) (postFunc, error) {
	return nil, fmt.Errorf("ingest floor: storage's batch entry point is not in this build (it comes with the ingest branch); run with --no-floor")
}
