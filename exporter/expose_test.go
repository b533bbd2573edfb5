package exporter

import (
	"bytes"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// exposition is a metric family in the text format.
func exposition(mf *dto.MetricFamily) string {
	var b bytes.Buffer
	if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
		panic(err)
	}
	return b.String()
}
