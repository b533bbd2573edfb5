//go:build linux

package ipvs

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/svctrace/internal/netnstest"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink"
	"github.com/svctrace/svctrace/plugins/ipvs/ipvsnetlink/ipvsnetlinktest"
)

// recordIPVSTable records the IPVS table of ns, a namespace of a kernel
// with IPVS: empty, then with the render of testView's virtual and real
// servers (session affinity, NodePorts, load balancers), written with
// ipvsadm; each time the reader's listing
// must be ipvsadm -Ln's.
func recordIPVSTable(t *testing.T, ns string, read func(*ipvsnetlinktest.Recorder) (*Table, error)) {
	check := func(name, state string) {
		t.Helper()
		rec := ipvsnetlinktest.NewRecorder(ipvsnetlink.Kernel{})
		tab, err := read(rec)
		if err != nil {
			t.Fatal(err)
		}
		tool := netnstest.Run(t, ns, "", "ipvsadm", "-Ln")
		if got := tab.Listing(); got != ipvsadmText(tool) {
			t.Fatalf("%s: the reader's listing differs from ipvsadm -Ln's:\n%s\n--- ipvsadm\n%s--- reader\n%s", name, netnstest.LineDiff(tool, got), tool, got)
		}
		saveRecording(t, name, rec, state, "ipvsadm -Ln", tool)
	}
	check("ipvs-empty", "IPVS loaded, no virtual server")
	target := Render(testView(), RenderSettings{Family: "IPv4", NotLocal: "! -s 10.244.0.0/16", MasqueradeBit: 14,
		NodePortIPs: addrs("192.0.2.10"), NodeIP: addrs("192.0.2.10")[0]})
	// A real server's address must be of a type the routing tables
	// know (RTN_UNICAST): a namespace has no local table until an
	// address is up.
	setup := append([]string{"ip link set lo up"}, ipvsadmCommands(target.Virtuals)...)
	netnstest.Run(t, ns, "", "sh", "-c", strings.Join(setup, " && "))
	check("ipvs-render", "the virtual and real servers of the render of testView (render_test.go), written by ipvsadm")
}

// ipvsadmCommands are the ipvsadm commands that make the virtual servers.
func ipvsadmCommands(vs []*Virtual) []string {
	var out []string
	for _, v := range vs {
		svc := map[string]string{"TCP": "-t ", "UDP": "-u ", "SCTP": "--sctp-service "}[v.Protocol] + v.Addr.String()
		cmd := "ipvsadm -A " + svc + " -s " + v.Scheduler
		if v.Persistent > 0 {
			cmd += " -p " + strconv.Itoa(int(v.Persistent))
		}
		out = append(out, cmd)
		for _, r := range v.Reals {
			fwd := map[string]string{"Masq": "-m", "Route": "-g", "Tunnel": "-i"}[r.Forward]
			out = append(out, fmt.Sprintf("ipvsadm -a %s -r %s %s -w %d", svc, r.Addr, fwd, r.Weight))
		}
	}
	return out
}
