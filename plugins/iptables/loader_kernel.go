package iptables

import (
	"fmt"

	"github.com/svctrace/svctrace/dataplane"
	"github.com/svctrace/svctrace/snapshot"
)

var _ dataplane.KernelReader = Loader{}

// LegacySource names a dump read from the legacy tables by ReadLegacy.
const LegacySource = "x_tables (getsockopt)"

// ReadKernel reads the legacy backend's tables of the family the collector
// dumps (ReadLegacy) for iptables-legacy-save: the kernel hands them over
// at once, where the tool takes several times as long to print them. The
// nf_tables backend is left to its tool.
func (Loader) ReadKernel(collector, backend string) (snapshot.Dump, error) {
	d, err := legacyDump(collector, backend)
	if err != nil {
		return d, err
	}
	text, err := ReadLegacy(d.Family)
	if err != nil {
		return d, err
	}
	d.Origin, d.Text = LegacySource, text
	return d, nil
}

// legacyDump is the dump a kernel read stands for: the legacy backend's
// iptables-save or ip6tables-save.
func legacyDump(collector, backend string) (snapshot.Dump, error) {
	if backend != "legacy" || (collector != CollectorSave && collector != CollectorSave6) {
		return snapshot.Dump{}, fmt.Errorf("iptables: no kernel read stands for %s (%s)", collector, backend)
	}
	d := snapshot.Dump{Collector: collector, Family: famIPv4, Backend: backend}
	if collector == CollectorSave6 {
		d.Family = famIPv6
	}
	return d, nil
}
