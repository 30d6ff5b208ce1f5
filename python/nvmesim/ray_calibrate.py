"""Ray driver of ``nvmesim calibrate --ray ADDRESS``: one Ray task per simulator run.

``nvmesim calibrate`` (Rust) runs the search and sends each batch of
candidate runs here as JSON lines on stdin (one self-contained RunSpec per
line, an empty line ending the batch). The whole batch is submitted at once,
so a cluster runs it in parallel; the answers go back on stdout as JSON
lines ``{"ok": bool, "text": fio JSON or error}`` in the batch's order, which
keeps the search deterministic whatever order the tasks finish in.
"""

from __future__ import annotations

import argparse
import json
import sys


def _run_task(spec_json: str):
    from nvmesim import _nvmesim as native

    return native.execute("calibrate", spec_json)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="nvmesim calibrate --ray", description=__doc__.splitlines()[0])
    ap.add_argument("--address", default=None, help="Ray address: auto, local, or host:port")
    a = ap.parse_args(argv)
    try:
        import ray
    except ImportError:
        print("nvmesim calibrate --ray needs ray: pip install 'ray>=2.9' (or pip install '.[ray]')", file=sys.stderr)
        return 1
    address = None if a.address in (None, "", "local") else a.address
    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    task = ray.remote(num_cpus=1, max_retries=0)(_run_task)
    batch = []
    for line in sys.stdin:
        line = line.strip()
        if line:
            batch.append(line)
            continue
        refs = [task.remote(s) for s in batch]
        for r in refs:
            ok, text = ray.get(r)
            sys.stdout.write(json.dumps({"ok": bool(ok), "text": text}) + "\n")
        sys.stdout.flush()
        batch = []
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
