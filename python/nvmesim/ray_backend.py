"""Ray backend of ``nvmesim.sweep``: one Ray task per run.

The driver plans the sweep with the same Rust code as the CLI; each task
gets a self-contained run (job file and config texts inside), so cluster
nodes need the ``nvmesim`` package but none of the driver's files. Results
come back to the driver, which writes the same files and the same table as
the local backend: for the same spec and seeds the table is byte-identical.

Also the driver of ``nvmesim sweep --ray ADDRESS`` (``python -m nvmesim.ray_backend``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional, Union

from . import _nvmesim
from ._nvmesim import NvmesimError


def _run_task(name: str, spec_json: str):
    from nvmesim import _nvmesim as native

    return native.execute(name, spec_json)


def sweep_ray(
    spec: Union[str, "os.PathLike[str]", "_nvmesim.Plan"],
    out: Union[str, "os.PathLike[str]"],
    address: Optional[str] = None,
    progress: bool = True,
) -> tuple:
    """Run the sweep's pending runs as Ray tasks and write the table
    (``spec``: a sweep file or an already planned ``_nvmesim.Plan``).

    Returns (runs, ran, skipped, failed, wall seconds).
    """
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise NvmesimError("backend='ray' needs ray: pip install 'ray>=2.9' (or pip install '.[ray]')") from e
    t0 = time.monotonic()
    plan = spec if isinstance(spec, _nvmesim.Plan) else _nvmesim.Plan(os.fspath(spec))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    task = ray.remote(num_cpus=1, max_retries=0)(_run_task)
    names = plan.names()
    pending = plan.pending(os.fspath(out))
    refs = {task.remote(names[i], plan.spec_json(i)): i for i in pending}
    done = failed = 0
    tty = progress and sys.stderr.isatty()
    while refs:
        ready, _ = ray.wait(list(refs), num_returns=1)
        for r in ready:
            i = refs.pop(r)
            ok, text = ray.get(r)
            plan.store(os.fspath(out), i, ok, text)
            done += 1
            failed += 0 if ok else 1
            if tty:
                el = time.monotonic() - t0
                eta = el / done * (len(pending) - done)
                print(f"\rruns {done}/{len(pending)}, {failed} failed, {el:.0f} s (eta {eta:.0f} s)  ",
                      end="", file=sys.stderr, flush=True)
    if tty:
        print(file=sys.stderr)
    plan.write_table(os.fspath(out))
    return len(plan), len(pending), len(plan) - len(pending), failed, time.monotonic() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="nvmesim sweep --ray", description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--out", required=True)
    ap.add_argument("--address", default=None, help="Ray address: auto, local, or host:port")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    address = None if a.address in (None, "") else a.address
    try:
        runs, ran, skipped, failed, wall = sweep_ray(a.spec, a.out, address=address, progress=not a.quiet)
    except NvmesimError as e:
        print(f"nvmesim: {e}", file=sys.stderr)
        return 1
    print(f"sweep (ray {a.address}): {runs} runs ({ran} run now, {skipped} already done, {failed} failed) "
          f"in {wall:.2f} s wall", file=sys.stderr)
    print(f"       -> {Path(a.out) / 'results.csv'}, {Path(a.out) / 'results.parquet'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
