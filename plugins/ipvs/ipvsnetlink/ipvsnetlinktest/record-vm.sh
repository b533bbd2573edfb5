#!/bin/sh
# record-vm.sh: records the IPVS table (plugins/ipvs TestIPVSKernelRecorded)
# in a kernel that has IPVS: the VM lab's (test/lab), through
# plugins/ipvs/vm-test.sh. The recordings are written into
# plugins/ipvs/testdata/kernel. Run as root from the repository's root,
# after the lab has made its cache once (any test/e2e ipvs VM test does):
#
#	sudo sh plugins/ipvs/ipvsnetlink/ipvsnetlinktest/record-vm.sh
set -eu
SVCTRACE_VM_ENV='SVCTRACE_RECORD=1 SVCTRACE_RECORD_HOW="sudo sh plugins/ipvs/ipvsnetlink/ipvsnetlinktest/record-vm.sh (the VM lab'"'"'s kernel)"' \
	SVCTRACE_VM_BRING_BACK='testdata/kernel/ipvs-*' \
	exec sh plugins/ipvs/vm-test.sh -test.run TestIPVSKernelRecorded -test.v
