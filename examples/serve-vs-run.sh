#!/usr/bin/env bash
# Real fio 3.33 (nbd engine) against `nvmesim serve`, next to `nvmesim run`
# of the same job (libaio, simulated), for the serve table in docs/serve.md; and the
# lag steps: fio's rate_iops in steps, the share of late replies at each.
#
#   examples/serve-vs-run.sh table [SECONDS]     (default 5 s per fio run)
#   examples/serve-vs-run.sh lag PRESET RATE...  (3 s per step, 4 KiB randread, iodepth 16)
#
# TIME_SCALE=S (default 1) serves with `--time-scale S` (S wall seconds per
# simulated second) and converts fio's figures to simulated time (IOPS x S,
# latency / S), so that a drive this machine cannot serve live is compared
# with the client path's cost shrunk S times.
#
# Prints one line per run. Needs a release build and fio.
set -euo pipefail
cd "$(dirname "$0")/.."
NVMESIM=${NVMESIM:-target/release/nvmesim}
SCALE=${TIME_SCALE:-1}
work=$(mktemp -d /tmp/nvmesim-vs.XXXXXX)
trap 'rm -rf "$work"' EXIT

# serve_fio DEVICE SECONDS FIO-ARGS...: prints "iops_r lat_r iops_w lat_w late% lagmax_us"
serve_fio() {
    local dev=$1 secs=$2; shift 2
    local sock=$work/s.sock
    rm -f "$sock"
    "$NVMESIM" serve --device "$dev" --socket "$sock" --quiet --output-format json --time-scale "$SCALE" \
        --output "$work/serve.json" &
    local srv=$!
    for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.05; done
    fio --name=x --ioengine=nbd --uri="nbd+unix:///?socket=$sock" --bs=4k --time_based \
        --runtime="$secs" --output-format=json "$@" > "$work/fio.json"
    kill -TERM $srv; wait $srv
    python3 - "$work/fio.json" "$work/serve.json" "$SCALE" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
f = json.loads(t[t.index("{"):])["jobs"][0]
s = json.load(open(sys.argv[2]))["nvmesim serve"]
k = float(sys.argv[3])
r, w = f["read"], f["write"]
print(f"{r['iops'] * k:.0f} {r['clat_ns']['mean'] / 1e3 / k:.1f} {w['iops'] * k:.0f} {w['clat_ns']['mean'] / 1e3 / k:.1f} "
      f"{s['lag']['late_pct']:.2f} {s['lag']['max_us']:.0f}")
EOF
}

# run_sim DEVICE SECONDS FIO-ARGS...: `nvmesim run` of the job for as long
# in simulated time as the served run lasted (SECONDS / TIME_SCALE)
run_sim() {
    local dev=$1 secs=$2; shift 2
    local ms
    ms=$(python3 -c "print(max(1, round(1000 * $secs / $SCALE)))")
    "$NVMESIM" run --device "$dev" --quiet --output-format json --name=x --ioengine=libaio --direct=1 \
        --filename=/dev/nvme0n1 --bs=4k --time_based --runtime="${ms}ms" "$@" > "$work/run.json"
    python3 - "$work/run.json" <<'EOF'
import json, sys
t = open(sys.argv[1]).read()
f = json.loads(t[t.index("{"):])["jobs"][0]
r, w = f["read"], f["write"]
print(f"{r['iops']:.0f} {r['clat_ns']['mean'] / 1e3:.1f} {w['iops']:.0f} {w['clat_ns']['mean'] / 1e3:.1f}")
EOF
}

case ${1:-table} in
table)
    secs=${2:-5}
    echo "# device job | fio over NBD: r_iops r_clat_us w_iops w_clat_us late% lag_max_us | nvmesim run: r_iops r_clat_us w_iops w_clat_us"
    for dev in intel-750-400g samsung-pm1725a null; do
        for job in "randread 1" "randread 16" "randwrite 16" "randrw 16"; do
            set -- $job
            args=(--rw="$1" --iodepth="$2")
            [ "$1" = randrw ] && args+=(--rwmixread=70)
            a=$(serve_fio "$dev" "$secs" "${args[@]}")
            b=$( [ "$dev" = null ] && echo "- - - -" || run_sim "$dev" "$secs" "${args[@]}")
            echo "$dev $1 qd$2 | $a | $b"
        done
    done
    ;;
lag)
    dev=$2; shift 2
    echo "# $dev randread qd16: rate_iops -> achieved_iops clat_us late% lag_max_us"
    for rate in "$@"; do
        a=$(serve_fio "$dev" 3 --rw=randread --iodepth=16 --rate_iops="$rate")
        set -- $a
        echo "$rate -> $1 $2 $5 $6"
    done
    ;;
*) echo "usage: $0 table [SECONDS] | lag PRESET RATE..." >&2; exit 2 ;;
esac
