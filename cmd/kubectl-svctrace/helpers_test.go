package main

import (
	"encoding/json"
	"testing"

	"github.com/svctrace/svctrace/analysis"
)

func decodeDrift(t *testing.T, out string) *analysis.DriftReport {
	t.Helper()
	var r analysis.DriftReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("drift -o json: %v\n%s", err, out)
	}
	if r.Kind != "DriftReport" || r.APIVersion != "svctrace.dev/v1alpha1" {
		t.Errorf("report type = %s %s", r.APIVersion, r.Kind)
	}
	return &r
}
