#!/usr/bin/env bash
# A power cut under a file system: `nvmesim serve` exports the drive over
# NBD with its data in a file, nbdfuse shows the export as a file,
# mkfs.ext4 makes a file system in its first FS_SIZE, fuse2fs mounts it, and
# a writer creates 64 KiB files in a loop (with --fsync, each file is
# fsynced: its data and metadata reach the drive as NBD flushes). After
# SECONDS the server gets SIGUSR1 and cuts the power; then e2fsck -fn
# checks the file system as the drive holds it after power returns.
#
#   examples/serve-power-cut.sh [options]
#     --device PRESET     drive preset (default samsung-pm1725a: power-loss protection)
#     --config FILE       machine config instead (examples/pm1725a-volatile.toml:
#                         a volatile write cache)
#     --fsync             fsync each file
#     --seconds S         wall seconds of writing before the cut (default 3)
#
# Prints how many files the writer finished, the server's power cut lines
# (stderr), e2fsck's output and its exit status (0: clean, 4: errors left).
# Needs: a release build (target/release/nvmesim, or NVMESIM=path), nbdfuse
# (Debian libnbd-bin), fuse2fs (Debian fuse2fs) with FUSE (/dev/fuse, root or
# fusermount), mkfs.ext4 and e2fsck (e2fsprogs), python3.
set -euo pipefail
cd "$(dirname "$0")/.."

NVMESIM=${NVMESIM:-target/release/nvmesim}
dev=(--device samsung-pm1725a)
fsync=0
secs=3
FS_SIZE=${FS_SIZE:-1G}
while [ $# -gt 0 ]; do
    case $1 in
        --device) dev=(--device "$2"); shift 2 ;;
        --config) dev=(--config "$2"); shift 2 ;;
        --fsync) fsync=1; shift ;;
        --seconds) secs=$2; shift 2 ;;
        *) echo "serve-power-cut.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for p in nbdfuse fuse2fs mkfs.ext4 e2fsck python3; do
    command -v $p >/dev/null || { echo "serve-power-cut.sh: $p is missing (nbdfuse: libnbd-bin; fuse2fs: fuse2fs)" >&2; exit 1; }
done
[ -x "$NVMESIM" ] || { echo "serve-power-cut.sh: $NVMESIM not built (cargo build --release)" >&2; exit 1; }

work=$(mktemp -d /tmp/nvmesim-cut.XXXXXX)
sock=$work/ssd.sock
server=
cleanup() {
    mountpoint -q "$work/fs" 2>/dev/null && { fusermount3 -u -z "$work/fs" 2>/dev/null || umount -l "$work/fs"; }
    mountpoint -q "$work/nbd" 2>/dev/null && { fusermount3 -u -z "$work/nbd" 2>/dev/null || umount -l "$work/nbd"; }
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/nbd" "$work/fs"

"$NVMESIM" serve "${dev[@]}" --precondition none --socket "$sock" --store "file:$work/disk.img" \
    --power-cut-on-sigusr1 --quiet >"$work/serve.out" 2>"$work/serve.err" &
server=$!
while [ ! -S "$sock" ]; do sleep 0.1; done
nbdfuse "$work/nbd" "nbd+unix:///?socket=$sock" &
while [ ! -e "$work/nbd/nbd" ]; do sleep 0.1; done
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1 "$work/nbd/nbd" "$FS_SIZE"
fuse2fs "$work/nbd/nbd" "$work/fs"

python3 - "$work/fs" "$fsync" <<'PY' &
import os, sys
d, sync = sys.argv[1], sys.argv[2] == "1"
i = 0
while True:
    try:
        with open(f"{d}/f{i:05d}", "wb") as f:
            f.write(bytes([i % 251]) * 65536)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        i += 1
    except OSError as e:
        print(f"writer: {i} files written, then: {e.strerror}")
        break
PY
writer=$!
sleep "$secs"
kill -USR1 "$server"
status=0
wait "$server" || status=$?
server=
echo "nvmesim serve exit status $status"
wait "$writer" || true
# nbdfuse cannot reach the server any more: detach both mounts.
fusermount3 -u -z "$work/fs" 2>/dev/null || umount -l "$work/fs" || true
fusermount3 -u -z "$work/nbd" 2>/dev/null || umount -l "$work/nbd" || true
cat "$work/serve.err"
fsck=0
e2fsck -fn "$work/disk.img" || fsck=$?
echo "e2fsck -fn exit status $fsck"
