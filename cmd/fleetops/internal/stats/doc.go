// Package stats holds the figures every fleetops run prints: latency
// percentiles, throughput, counts of statuses and transport errors by
// endpoint and by second, and the tables that show them. It also holds the
// closed-loop driver whose calls those figures describe, so that the
// replica runs and the bench harness count a request the same way.
//
// Percentiles are nearest-rank: the p-th percentile of n samples is the
// ⌈n·p/100⌉-th smallest (the smallest for p ≤ 0, the largest for p ≥ 100).
package stats
