package iptables

import (
	"strconv"
	"strings"
)

// listingServices are the port names of netbase's /etc/services (Debian,
// Ubuntu), as iptables -L without -n prints ports ("dpt:http"): name and
// port, blank-separated. A name not in it is kept unread.
const listingServices = "" +
	"acr-nema 104 afpovertcp 548 afs3-bos 7007 afs3-callback 7001 afs3-fileserver 7000 afs3-kaserver 7004 afs3-prserver 7002 afs3-rmtsys 7009 " +
	"afs3-update 7008 afs3-vlserver 7003 afs3-volser 7005 amanda 10080 amandaidx 10082 amidxtape 10083 amqp 5672 amqps 5671 " +
	"asf-rmcp 623 asp 27374 auth 113 babel 6696 bacula-dir 9101 bacula-fd 9102 bacula-sd 9103 bbs 7000 " +
	"bgp 179 bgpd 2605 biff 512 binkp 24554 bootpc 68 bootps 67 canna 5680 cfengine 5308 " +
	"chargen 19 cisco-sccp 2000 clc-build-daemon 8990 clearcase 371 cmip-agent 164 cmip-man 163 codaauth2 370 codasrv 2432 " +
	"codasrv-se 2433 csync2 30865 cvspserver 2401 daap 3689 datametrics 1645 daytime 13 db-lsp 17500 dcap 22125 " +
	"dhcpv6-client 546 dhcpv6-server 547 dicom 11112 dict 2628 dircproxy 57000 discard 9 distcc 3632 domain 53 " +
	"domain-s 853 echo 7 epmap 135 epmd 4369 exec 512 f5-globalsite 2792 f5-iquery 4353 fax 4557 " +
	"fido 60179 finger 79 font-service 7100 freeciv 5556 fsp 21 ftp 21 ftp-data 20 ftps 990 " +
	"ftps-data 989 gdomap 538 gds-db 3050 git 9418 gnunet 2086 gnutella-rtr 6347 gnutella-svc 6346 gopher 70 " +
	"gpsd 2947 gris 2135 groupwise 1677 gsidcap 22128 gsiftp 2811 gsigatekeeper 2119 hkp 11371 http 80 " +
	"http-alt 8080 https 443 hylafax 4559 iax 4569 icpv2 3130 imap2 143 imaps 993 ingreslock 1524 " +
	"ipp 631 iprop 2121 ipsec-nat-t 4500 ipx 213 ircd 6667 ircs-u 6697 isakmp 500 iscsi-target 3260 " +
	"isisd 2608 isns 3205 iso-tsap 102 kamanda 10081 kerberos 88 kerberos-adm 749 kerberos-master 751 kerberos4 750 " +
	"kermit 1649 klogin 543 kpasswd 464 krb-prop 754 kshell 544 l2f 1701 ldap 389 ldaps 636 " +
	"ldp 646 login 513 lotusnote 1352 mailq 174 mdns 5353 microsoft-ds 445 moira-db 775 moira-update 777 " +
	"moira-ureg 779 mon 2583 ms-sql-m 1434 ms-sql-s 1433 ms-wbt-server 3389 mtn 4691 munin 4949 mysql 3306 " +
	"mysql-proxy 6446 nbd 10809 netbios-dgm 138 netbios-ns 137 netbios-ssn 139 netstat 15 nfs 2049 nntp 119 " +
	"nntps 563 nqs 607 nrpe 5666 nsca 5667 ntalk 518 ntp 123 ntske 4460 nut 3493 " +
	"omniorb 8088 openvpn 1194 ospf6d 2606 ospfapi 2607 ospfd 2604 passwd-server 752 pawserv 345 pop3 110 " +
	"pop3s 995 poppassd 106 postgresql 5432 predict 1210 printer 515 proofd 1093 ptp-event 319 ptp-general 320 " +
	"puppet 8140 qmqp 628 qmtp 209 qotd 17 radius 1812 radius-acct 1813 radmin-port 4899 redis 6379 " +
	"remctl 4373 ripd 2602 ripngd 2603 rmiregistry 1099 rmtcfg 1236 rootd 1094 route 520 rpc2portmap 369 " +
	"rplay 5555 rsync 873 rtcm-sc104 2101 rtsp 554 sa-msg-port 1646 saft 487 sane-port 6566 sge-execd 6445 " +
	"sge-qmaster 6444 sgi-cad 17004 sgi-cmsd 17001 sgi-crsd 17002 sgi-gcd 17003 shell 514 sieve 4190 silc 706 " +
	"sip 5060 sip-tls 5061 skkserv 1178 smtp 25 smux 199 snmp 161 snmp-trap 162 snpp 444 " +
	"socks 1080 spamd 783 ssh 22 submission 587 submissions 465 sunrpc 111 supfiledbg 1127 supfilesrv 871 " +
	"suucp 4031 svn 3690 svrloc 427 syslog 514 syslog-tls 6514 sysrqd 4094 systat 11 tacacs 49 " +
	"talk 517 tcpmux 1 telnet 23 telnets 992 tfido 60177 tftp 69 time 37 tinc 655 " +
	"tproxy 8081 uucp 540 venus 2430 venus-se 2431 webmin 10000 who 513 whois 43 wnn6 22273 " +
	"x11 6000 x11-1 6001 x11-2 6002 x11-3 6003 x11-4 6004 x11-5 6005 x11-6 6006 x11-7 6007 " +
	"xdmcp 177 xinetd 9098 xmms2 9667 xmpp-client 5222 xmpp-server 5269 xtel 1313 xtelw 1314 z3950 210 " +
	"zabbix-agent 10050 zabbix-trapper 10051 zebra 2601 zebrasrv 2600 zephyr-clt 2103 zephyr-hm 2104 zephyr-srv 2102 zope 9673 " +
	"zope-ftp 8021 zserv 346 "

// listingPort is a port as iptables -L prints it: a number, or a name of
// listingServices; false for a name it does not know.
func listingPort(s string) (string, bool) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		return s, true
	}
	i := strings.Index(" "+listingServices, " "+s+" ")
	if i < 0 || s == "" {
		return "", false
	}
	rest := listingServices[i+len(s)+1:]
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	if _, err := strconv.ParseUint(rest, 10, 16); err != nil {
		return "", false
	}
	return rest, true
}
