#!/bin/bash
# Regenerates real fio-3.33's normal output for the reference jobs, which
# tests/suite/fio_text.rs compares nvmesim's normal output with (digits and
# the other value-dependent pieces masked; see that file).
#
#   tests/data/fio-text/regen.sh [SCRATCH_DIR]     (default /tmp/nvmesim-fio-text)
#
# For each job of ../fio-reference/ it writes JOB.fio (the reference job with
# its filename pointed at SCRATCH_DIR/fio-test.dat, runtime=1 and a 500 ms
# ramp_time where it had one, so the whole set runs in about 15 s) and
# JOB.txt (what `fio --output-format=normal JOB.fio` printed). The test runs
# nvmesim on the same JOB.fio. The data file is written here first so that
# fio does not lay it out during a run (no "Laying out IO file" line).
# Numbers are this machine's; only the structure is compared.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ref="$here/../fio-reference"
scratch=${1:-/tmp/nvmesim-fio-text}
version=$(fio --version)
if [ "$version" != "fio-3.33" ]; then
  echo "regen.sh: needs fio-3.33, found '$version'" >&2
  exit 1
fi
mkdir -p "$scratch"
file="$scratch/fio-test.dat"
dd if=/dev/zero of="$file" bs=1M count=128 status=none
cd "$scratch"    # write_*_log files land in the working directory
for job in randread-libaio randrw-mixed randwrite-numjobs seq-stonewall-groups \
           qos-prio-rate latlog-zipf json-variants prio-group; do
  sed -e "s#^filename=.*#filename=$file#" \
      -e "s#^runtime=.*#runtime=1#" \
      -e "s#^ramp_time=.*#ramp_time=500ms#" \
      "$ref/$job.fio" > "$here/$job.fio"
  fio --output-format=normal "$here/$job.fio" > "$here/$job.txt"
  echo "$job: $(wc -l < "$here/$job.txt") lines"
done

# fio's sync options (no fio-reference counterpart): fsync every 4 writes,
# then fdatasync every 2. fio runs them on the data file; nvmesim models
# them on a block device only, so the test points its run at /dev/nvme0n1.
cat > "$here/sync-psync.fio" <<JOB
; fsync=N and fdatasync=N with a synchronous engine: the normal output's
; "fsync/fdatasync/sync_file_range" block, and fio 3.33 counting each
; fdatasync as a short read in "issued rwts".
[global]
ioengine=psync
direct=1
filename=$file
size=16M
rw=write
bs=4k
time_based=1
runtime=1

[fsync4]
fsync=4

[fdatasync2]
stonewall
fdatasync=2
JOB
fio --output-format=normal "$here/sync-psync.fio" > "$here/sync-psync.txt"
echo "sync-psync: $(wc -l < "$here/sync-psync.txt") lines"
