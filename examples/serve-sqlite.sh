#!/usr/bin/env bash
# A real program on the simulated drive: `nvmesim serve` exports the drive
# over NBD, nbdfuse shows the export as a file, mkfs.ext4 makes a file
# system in its first FS_SIZE, fuse2fs mounts it, and a SQLite benchmark
# (Python's sqlite3, PRAGMA synchronous=FULL, so every commit's fsyncs
# become NBD flushes) runs on it. Prints the benchmark's throughput, then
# the server's results (device latency percentiles, GC).
#
#   examples/serve-sqlite.sh [options]
#     --device PRESET     drive preset (default samsung-pm1725a)
#     --config FILE       machine config instead (e.g. a volatile-cache variant)
#     --txns N            SQLite transactions (default 300), 10 inserts each
#     --bg                a background writer: fio's nbd engine, 4 KiB randwrite
#                         at iodepth BG_DEPTH (default 32), block size BG_BS
#                         (default 4k), beyond the file system
#     --wrr               exports fg:best-effort and bg:idle (weighted round
#                         robin: SQs high and low); without it, both exports
#                         have no class (round robin)
#     --weights H:M:L     WRR weights (with --wrr; default the drive's)
#
# Needs: a release build (target/release/nvmesim, or NVMESIM=path), nbdfuse
# (Debian libnbd-bin), fuse2fs (Debian fuse2fs) with FUSE (/dev/fuse, root or
# fusermount), mkfs.ext4, python3 with sqlite3, and fio (for --bg).
set -euo pipefail
cd "$(dirname "$0")/.."

NVMESIM=${NVMESIM:-target/release/nvmesim}
dev=(--device samsung-pm1725a)
txns=300
bg=0
wrr=0
weights=()
FS_SIZE=${FS_SIZE:-1G}
BG_DEPTH=${BG_DEPTH:-32}
BG_BS=${BG_BS:-4k}
while [ $# -gt 0 ]; do
    case $1 in
        --device) dev=(--device "$2"); shift 2 ;;
        --config) dev=(--config "$2"); shift 2 ;;
        --txns) txns=$2; shift 2 ;;
        --bg) bg=1; shift ;;
        --wrr) wrr=1; shift ;;
        --weights) weights=(--weights "$2"); shift 2 ;;
        *) echo "serve-sqlite.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
for p in nbdfuse fuse2fs mkfs.ext4 python3; do
    command -v $p >/dev/null || { echo "serve-sqlite.sh: $p is missing (nbdfuse: libnbd-bin; fuse2fs: fuse2fs)" >&2; exit 1; }
done
if [ $bg = 1 ]; then command -v fio >/dev/null || { echo "serve-sqlite.sh: fio is missing" >&2; exit 1; }; fi
[ -x "$NVMESIM" ] || { echo "serve-sqlite.sh: $NVMESIM not built (cargo build --release)" >&2; exit 1; }

work=$(mktemp -d /tmp/nvmesim-sqlite.XXXXXX)
sock=$work/ssd.sock
server=
cleanup() {
    mountpoint -q "$work/fs" 2>/dev/null && { fusermount3 -u "$work/fs" 2>/dev/null || umount "$work/fs"; }
    mountpoint -q "$work/nbd" 2>/dev/null && { fusermount3 -u "$work/nbd" 2>/dev/null || umount "$work/nbd"; }
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

if [ $wrr = 1 ]; then
    exports=(--export fg:best-effort --export bg:idle "${weights[@]}")
else
    exports=(--export fg --export bg)
fi
# The data in a sparse file, not memory: the background writer alone
# writes up to 16 GiB (the kernel's page cache keeps what is hot).
"$NVMESIM" serve "${dev[@]}" --socket "$sock" "${exports[@]}" --quiet \
    --store "file:$work/drive.img" --output-format json --output "$work/serve.json" &
server=$!
for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { echo "serve-sqlite.sh: the server did not start" >&2; exit 1; }

mkdir "$work/nbd" "$work/fs"
nbdfuse "$work/nbd" "nbd+unix:///fg?socket=$sock" &
for _ in $(seq 200); do [ -f "$work/nbd/nbd" ] && break; sleep 0.05; done
[ -f "$work/nbd/nbd" ] || { echo "serve-sqlite.sh: nbdfuse did not mount" >&2; exit 1; }
# Only the first FS_SIZE holds the file system; no discard of the whole
# drive; inode tables and journal initialised lazily.
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$work/nbd/nbd" "$FS_SIZE"
fuse2fs "$work/nbd/nbd" "$work/fs"

fio_pid=
if [ $bg = 1 ]; then
    # Beyond the file system: 4 KiB random writes over the next 16 GiB.
    fio --name=bg --ioengine=nbd --uri="nbd+unix:///bg?socket=$sock" --rw=randwrite --bs="$BG_BS" \
        --iodepth="$BG_DEPTH" --offset=4g --size=16g --time_based --runtime=3600 \
        --output="$work/fio-bg.txt" &
    fio_pid=$!
    sleep 1
fi

python3 - "$work/fs/bench.db" "$txns" <<'EOF'
import sqlite3, sys, time
path, n = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v BLOB)")
lat = []
t0 = time.monotonic()
for i in range(n):
    s = time.monotonic()
    db.execute("BEGIN")
    for j in range(10):
        db.execute("INSERT INTO t(k, v) VALUES (?, randomblob(200))", (i * 10 + j,))
    db.execute("COMMIT")
    lat.append(time.monotonic() - s)
dt = time.monotonic() - t0
rows = db.execute("SELECT count(*) FROM t").fetchone()[0]
lat.sort()
print(f"sqlite: {n} transactions ({rows} rows) in {dt:.2f} s: {n / dt:.1f} txn/s, "
      f"commit latency p50 {lat[len(lat) // 2] * 1e3:.2f} ms, p99 {lat[int(len(lat) * 0.99)] * 1e3:.2f} ms")
EOF

if [ -n "$fio_pid" ]; then
    kill -INT "$fio_pid"; wait "$fio_pid" || true
    grep -E "IOPS=|clat \(usec\)|lat \(usec\)" "$work/fio-bg.txt" | head -3 | sed 's/^/background fio: /'
fi
# fuse2fs flushes and exits after its unmount: nbdfuse's file stays busy until then.
unmount() {
    for _ in $(seq 100); do
        fusermount3 -u "$1" 2>/dev/null && return
        umount "$1" 2>/dev/null && return
        sleep 0.1
    done
    echo "serve-sqlite.sh: cannot unmount $1" >&2
    return 1
}
unmount "$work/fs"
unmount "$work/nbd"
kill -TERM "$server"; wait "$server" || true
server=
python3 - "$work/serve.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s, d = r["nvmesim serve"], r["nvmesim"]["device"]
print(f"server: {s['device']}, {s['simulated_s']:.1f} s, lag max {s['lag']['max_us']:.0f} us, "
      f"{s['lag']['late_pct']:.2f}% late")
for e in s["exports"]:
    for k in ("read", "write", "flush"):
        x = e[k]
        if x["total_ios"] == 0:
            continue
        p = {q: v / 1e3 for q, v in x["lat_ns"]["percentile"].items()}
        print(f"  export '{e['name']}' {k:<5} ios={x['total_ios']} IOPS={x['iops']:.0f} "
              f"device lat (us) mean={x['lat_ns']['mean'] / 1e3:.1f} p50={p['50.000000']:.1f} "
              f"p99={p['99.000000']:.1f} p99.9={p['99.900000']:.1f} max={x['lat_ns']['max'] / 1e3:.1f}")
print(f"  GC: runs={d.get('gc_runs')} pages_copied={d.get('gc_pages_copied')} erases={d.get('erases')} "
      f"write_amplification={d.get('write_amplification', 1):.3f}; volatile cache={d.get('volatile_write_cache')} "
      f"durability waits={d.get('durability_waits')} padded programs={d.get('padded_programs')}")
EOF
