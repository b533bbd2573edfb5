#!/bin/sh
# record-vm.sh: records the IPVS table (plugins/ipvs TestIPVSKernelRecorded)
# in a kernel that has IPVS: the VM lab's (test/lab), Debian's kernel as
# test/lab unpacked it into its cache, booted by qemu with an initramfs of
# busybox, the IPVS modules, ip, ipvsadm and the test binary. The
# recordings are written into plugins/ipvs/testdata/kernel. Run as root
# from the repository's root, after the lab has made its cache once (any
# test/e2e ipvs VM test does):
#
#	sudo sh plugins/ipvs/ipvsnetlink/ipvsnetlinktest/record-vm.sh
set -eu
cache=${SVCTRACE_LAB_CACHE:-$HOME/.cache/svctrace-lab}/debian
kroot=$(ls -d "$cache"/linux-image-*-amd64 | head -1)
release=${kroot##*/linux-image-}
bb=$cache/busybox-static/bin/busybox
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/bin" "$root/mods" "$root/work/plugins/ipvs" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/run"
cp "$bb" "$root/bin/busybox"
CGO_ENABLED=0 go test -c -o "$root/ipvs.test" ./plugins/ipvs
# Tools and the libraries they load.
for tool in /usr/sbin/ip /usr/sbin/ipvsadm; do
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
for m in ip_vs ip_vs_rr; do
	for ko in $(modprobe --show-depends -d "$kroot" -S "$release" $m | awk '/^insmod/ {print $2}'); do
		name=$(basename "$ko")
		case " $insmods " in *" $name "*) continue ;; esac
		cp "$ko" "$root/mods/$name"
		insmods="$insmods $name"
	done
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
SVCTRACE_RECORD=1 SVCTRACE_RECORD_HOW="sudo sh plugins/ipvs/ipvsnetlink/ipvsnetlinktest/record-vm.sh (the VM lab's kernel)" \
	/ipvs.test -test.run 'TestIPVSKernelRecorded' -test.v 2>&1
echo "<<<recordings"
tar -C /work/plugins/ipvs -cf - testdata/kernel | gzip | base64
echo "recordings>>>"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | "$bb" cpio -o -H newc) >"$work/initrd"
# Software emulation: KVM fails in a nested VM ("failed to set MSR"), and
# the boot takes seconds either way; SVCTRACE_LAB_VM_KVM=1 asks for KVM.
accel=""
[ "${SVCTRACE_LAB_VM_KVM:-0}" = 1 ] && accel="-enable-kvm -cpu host"
timeout 300 qemu-system-x86_64 -m 1024 -display none -monitor none -no-reboot $accel \
	-kernel "$kroot/boot/vmlinuz-$release" -initrd "$work/initrd" \
	-append "console=ttyS0 panic=-1 quiet" -serial "file:$work/console" || true
sed -n '/=== RUN\|--- \|PASS\|FAIL\|ok\|\.go:/p' "$work/console" | tr -d '\r'
sed -n '/^<<<recordings/,/^recordings>>>/p' "$work/console" | tr -d '\r' | sed '1d;$d' | base64 -d | gzip -d | tar -C plugins/ipvs -xvf - --wildcards 'testdata/kernel/ipvs-*'
