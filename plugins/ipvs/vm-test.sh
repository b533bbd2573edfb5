#!/bin/sh
# vm-test.sh: runs plugins/ipvs's tests (and benchmarks) that need a
# kernel with IPVS in the VM lab's kernel (test/lab), as record-vm.sh
# records the IPVS table there: Debian's kernel as test/lab unpacked it
# into its cache, booted by qemu with an initramfs of busybox, the IPVS,
# ipset and dummy modules, ip, ipvsadm, ipset and the test binary. Run as
# root from the repository's root, after the lab has made its cache once
# (any test/e2e ipvs VM test does). The arguments are the test binary's:
#
#	sudo sh plugins/ipvs/vm-test.sh -test.run 'TestKernelFingerprint' -test.v
#	sudo sh plugins/ipvs/vm-test.sh -test.run '^$' -test.bench BenchmarkIPVSDigest10k -test.benchmem
#
# SVCTRACE_VM_ENV are assignments put before the test binary in the VM;
# SVCTRACE_VM_BRING_BACK is a pattern of files under plugins/ipvs that the
# run wrote in the VM, copied back into the tree (record-vm.sh records so).
# It exits with the test binary's status (1 when the VM gave none).
set -eu
cache=${SVCTRACE_LAB_CACHE:-$HOME/.cache/svctrace-lab}/debian
kroot=$(ls -d "$cache"/linux-image-*-amd64 | head -1)
release=${kroot##*/linux-image-}
bb=$cache/busybox-static/bin/busybox
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/bin" "$root/mods" "$root/work/plugins/ipvs" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/run" "$root/etc"
cp "$bb" "$root/bin/busybox"
cp -r plugins/ipvs/testdata "$root/work/plugins/ipvs/"
cp /etc/protocols "$root/etc/"
CGO_ENABLED=0 go test -tags ipvsvm -c -o "$root/ipvs.test" ./plugins/ipvs
# Tools and the libraries they load.
for tool in /usr/sbin/ip /usr/sbin/ipvsadm /usr/sbin/ipset; do
	mkdir -p "$root/usr/sbin"
	cp "$tool" "$root/usr/sbin/"
	for lib in $(ldd "$tool" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
done
mkdir -p "$root/lib64"
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
# The modules, each after what it needs.
insmods=""
for m in ip_vs ip_vs_rr ip_vs_wrr dummy ip_set ip_set_hash_ip ip_set_hash_ipport ip_set_hash_ipportip ip_set_hash_ipportnet ip_set_bitmap_port; do
	for ko in $(modprobe --show-depends -d "$kroot" -S "$release" $m | awk '/^insmod/ {print $2}'); do
		name=$(basename "$ko")
		case " $insmods " in *" $name "*) continue ;; esac
		cp "$ko" "$root/mods/$name"
		insmods="$insmods $name"
	done
done
bring=${SVCTRACE_VM_BRING_BACK:-}
args=""
for a in "$@"; do
	args="$args '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
done
cat >"$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
for m in $insmods; do insmod /mods/\$m; done
cd /work/plugins/ipvs
${SVCTRACE_VM_ENV:-} /ipvs.test $args 2>&1
rc=\$?
if [ -n "$bring" ]; then
	echo "<<<files"
	tar -C /work/plugins/ipvs -cf - "$(dirname "$bring")" | gzip | base64
	echo "files>>>"
fi
echo "<<<exit \$rc"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | "$bb" cpio -o -H newc) >"$work/initrd"
# Software emulation unless SVCTRACE_LAB_VM_KVM=1 asks for KVM: KVM fails
# in a nested VM ("failed to set MSR").
accel=""
[ "${SVCTRACE_LAB_VM_KVM:-0}" = 1 ] && accel="-enable-kvm -cpu host"
timeout "${SVCTRACE_VM_TIMEOUT:-900}" qemu-system-x86_64 -m 2048 -smp 2 -display none -monitor none -no-reboot $accel \
	-kernel "$kroot/boot/vmlinuz-$release" -initrd "$work/initrd" \
	-append "console=ttyS0 panic=-1 quiet" -serial "file:$work/console" || true
tr -d '\r' <"$work/console" | sed -n '/^<<<exit/q;/^<<<files/q;p' | grep -v '^\[ *[0-9.]*\]' || true
if [ -n "$bring" ]; then
	tr -d '\r' <"$work/console" | sed -n '/^<<<files/,/^files>>>/p' | sed '1d;$d' | base64 -d | gzip -d |
		tar -C plugins/ipvs -xvf - --wildcards "$bring"
fi
code=$(tr -d '\r' <"$work/console" | sed -n 's/^<<<exit \([0-9]*\)$/\1/p')
exit "${code:-1}"
