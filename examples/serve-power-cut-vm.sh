#!/usr/bin/env bash
# A power cut under the kernel's own ext4: a small Linux VM (QEMU, a Debian
# kernel, busybox) mounts ext4 from the served drive as a virtio
# disk (QEMU's NBD client: the guest sees a volatile write cache, and its
# flushes and FUA writes reach the server as NBD_CMD_FLUSH and FUA), writes
# 64 KiB files in a loop, and after SECONDS the server cuts the power
# (SIGUSR1). Then the journal is replayed (e2fsck -E journal_only) and
# e2fsck -fn checks the file system as the drive holds it after power
# returns.
#
#   examples/serve-power-cut-vm.sh [options]
#     --device PRESET     drive preset (default samsung-pm1725a: power-loss protection)
#     --config FILE       machine config instead (examples/pm1725a-volatile.toml:
#                         a volatile write cache)
#     --mount OPTS        ext4 mount options in the guest (default barrier;
#                         nobarrier: ext4 sends no flushes)
#     --fsync             fsync each file (dd conv=fsync) before counting it
#     --seconds S         wall seconds of writing before the cut (default 5)
#
# Prints the files the guest finished, the server's power cut lines, the
# journal replay, the 64 KiB files left whole, and e2fsck's verdict (exit 0:
# clean). Needs: a release build (target/release/nvmesim, or NVMESIM=path);
# qemu-system-x86_64 (Debian qemu-system-x86); a kernel with its modules:
# Debian's linux-image package, from apt's cache or fetched with apt-get
# download (KERNEL_DEB=path to use another .deb); busybox (busybox-static);
# mkfs.ext4, e2fsck and debugfs (e2fsprogs); nbdcopy (libnbd-bin); cpio. ACCEL=kvm runs the guest under KVM instead of
# TCG; KERNEL_QUIET= shows the guest kernel's boot lines in the console log;
# KEEP=1 keeps the temporary folder (console log, disk image) and names it.
set -euo pipefail
cd "$(dirname "$0")/.."

NVMESIM=${NVMESIM:-target/release/nvmesim}
dev=(--device samsung-pm1725a)
mountopts=barrier
secs=5
conv=
while [ $# -gt 0 ]; do
    case "$1" in
        --device) dev=(--device "$2"); shift 2 ;;
        --config) dev=(--config "$2"); shift 2 ;;
        --mount) mountopts=$2; shift 2 ;;
        --seconds) secs=$2; shift 2 ;;
        --fsync) conv=conv=fsync; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
for t in qemu-system-x86_64 busybox mkfs.ext4 e2fsck debugfs nbdcopy cpio; do
    command -v "$t" > /dev/null || { echo "needs $t" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/nvmesim-vmcut.XXXXXX)
deb=${KERNEL_DEB:-$(ls /var/cache/apt/archives/linux-image-[0-9]*-amd64_*.deb 2> /dev/null | tail -1 || true)}
if [ ! -f "$deb" ]; then
    # Debian's current kernel package, fetched (not installed) into the temporary folder.
    pkg=$(apt-cache depends linux-image-amd64 2> /dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    (cd "$dir" && [ -n "$pkg" ] && apt-get download "$pkg" > /dev/null 2>&1) || true
    deb=$(ls "$dir"/linux-image-*.deb 2> /dev/null | tail -1 || true)
fi
[ -f "${deb:-}" ] || { echo "needs a kernel package: KERNEL_DEB=path to a linux-image .deb (apt-get download linux-image-...)" >&2; exit 2; }
sock=$dir/ssd.sock
cleanup() {
    kill "${qemu_pid:-}" "${srv_pid:-}" 2> /dev/null || true
    [ -n "${KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT

# The guest: the kernel, the modules for virtio-blk and ext4, busybox, /init.
dpkg-deb -x "$deb" "$dir/k"
kver=$(ls "$dir/k/lib/modules")
root=$dir/root
mkdir -p "$root/bin" "$root/mods" "$root/dev" "$root/proc" "$root/sys" "$root/mnt"
cp "$(command -v busybox)" "$root/bin/busybox"
# Module files in load order (each after what it needs), where the kernel
# has them as modules rather than built in.
for m in crc16 mbcache jbd2 crc32c_generic libcrc32c ext4 virtio_ring virtio virtio_pci_legacy_dev \
    virtio_pci_modern_dev virtio_pci virtio_blk; do
    f=$(find "$dir/k/lib/modules/$kver" -name "$m.ko*" | head -1)
    if [ -n "$f" ]; then
        case "$f" in
            *.xz) xz -dc "$f" > "$root/mods/$m.ko" ;;
            *.zst) zstd -qdc "$f" > "$root/mods/$m.ko" ;;
            *) cp "$f" "$root/mods/$m.ko" ;;
        esac
        echo "$m" >> "$root/mods/order"
    fi
done
cat > "$root/init" << 'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
# Twice: a module whose dependency came later in the list loads the second time.
for pass in 1 2; do for m in $(cat /mods/order); do insmod /mods/$m.ko 2> /dev/null; done; done
opts=$(sed 's/.*nvmesim_mount=\([^ ]*\).*/\1/' /proc/cmdline)
conv=$(sed -n 's/.*nvmesim_dd=\([^ ]*\).*/\1/p' /proc/cmdline)
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done
if ! mount -t ext4 -o "$opts" /dev/vda /mnt; then echo "guest: mount failed"; poweroff -f; fi
echo "guest: mounted ext4 with $opts; writing"
i=0
while dd if=/dev/urandom of=/mnt/f$i bs=64k count=1 $conv 2> /dev/null; do
    i=$((i + 1))
    echo "guest: files $i"
done
echo "guest: writing stopped after $i files"
sleep 1000
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$dir/initrd.gz"

# The drive, with a 256 MiB ext4 written to its start and flushed.
"$NVMESIM" serve "${dev[@]}" --precondition none --socket "$sock" --store "file:$dir/disk.img" \
    --power-cut-on-sigusr1 --quiet > "$dir/serve.out" 2> "$dir/serve.err" &
srv_pid=$!
while [ ! -S "$sock" ]; do
    kill -0 "$srv_pid" 2> /dev/null || { cat "$dir/serve.err"; exit 1; }
    sleep 0.1
done
mkfs.ext4 -q -F "$dir/fs.img" 256M
nbdcopy --flush "$dir/fs.img" "nbd+unix:///?socket=$sock"

qemu-system-x86_64 -machine accel="${ACCEL:-tcg}" -m 512 -nographic -no-reboot \
    -kernel "$dir/k/boot/vmlinuz-$kver" -initrd "$dir/initrd.gz" \
    -append "console=ttyS0 ${KERNEL_QUIET-quiet} panic=-1 nvmesim_mount=$mountopts${conv:+ nvmesim_dd=$conv}" \
    -drive "file=nbd+unix:///?socket=$sock,format=raw,if=virtio,cache=none" > "$dir/console.log" 2>&1 &
qemu_pid=$!
for _ in $(seq 600); do
    grep -q "guest: mounted\|guest: mount failed" "$dir/console.log" && break
    sleep 0.1
done
grep -o "guest: mount.*" "$dir/console.log" || { cat "$dir/console.log"; exit 1; }
sleep "$secs"
kill -USR1 "$srv_pid"
status=0
wait "$srv_pid" || status=$?
kill "$qemu_pid" 2> /dev/null || true
wait "$qemu_pid" 2> /dev/null || true
done_files=$(grep -c 'guest: files' "$dir/console.log" || true)
echo "guest: $done_files files written${conv:+ and fsynced} before the cut"
echo "nvmesim serve exit status $status"
grep -v "^  lost bytes" "$dir/serve.err" | grep -v "^nvmesim serve: FTL maps" || true
echo "lost ranges listed: $(grep -c '^  lost bytes' "$dir/serve.err" || true)"
# Power is back: replay the journal as a mount would, then check everything.
e2fsck -E journal_only -y "$dir/disk.img" > "$dir/replay.out" 2>&1 || true
grep -q "recovering journal" "$dir/replay.out" && echo "journal replayed"
# Files f0 .. f(N-1) the guest finished: which are there whole (64 KiB) after the cut?
whole=$(debugfs -R "ls -p /" "$dir/disk.img" 2> /dev/null | awk -F/ '$6 ~ /^f[0-9]+$/ && $7 == 65536' | wc -l)
echo "after the cut: $whole files of 64 KiB in the file system"
fsck=0
e2fsck -fn "$dir/disk.img" > "$dir/fsck.out" 2>&1 || fsck=$?
grep -v "^Pass\|^e2fsck 1" "$dir/fsck.out" | head -12
echo "e2fsck -fn exit status $fsck"
