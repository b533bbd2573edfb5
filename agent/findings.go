package agent

import (
	"strings"

	"github.com/svctrace/svctrace/behavior"
	"github.com/svctrace/svctrace/model"
)

// findingKey names a finding across checks.
func findingKey(f behavior.Finding) string {
	return strings.Join([]string{f.Type, f.Service, strings.Join(f.Frontends, ","), f.Expected, f.Observed}, "\x00")
}

// serviceOf is the namespace/name of a finding's Service ("" for none).
func serviceOf(f behavior.Finding) string {
	name := model.ParseServicePortName(f.Service).Service()
	return name
}
