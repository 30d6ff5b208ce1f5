"""nvmesim: a fast, deterministic simulator of the NVMe multi-queue storage stack.

The simulator itself is Rust (the ``nvmesim`` command); this package runs it
in-process and gives sweeps back as pandas DataFrames::

    import nvmesim
    out = nvmesim.run("examples/randread-qd32.fio", device="intel-750-400g")
    out["jobs"][0]["read"]["iops"]

    df = nvmesim.sweep("examples/sweep-qd.toml", out="results/sweep-qd")
    df = nvmesim.sweep("examples/sweep-qd.toml", backend="ray", address="auto")
    df = nvmesim.load("results/sweep-qd")

Every error the CLI would print (a bad job file, config, flag or sweep) is
raised as :class:`NvmesimError` with the CLI's message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Union

from . import _nvmesim
from ._nvmesim import NvmesimError, policies

__all__ = ["run", "sweep", "load", "load_runs", "policies", "NvmesimError", "__version__"]
__version__: str = _nvmesim.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _file_or_text(x: Optional[Union[PathLike, str]], what: str):
    """(path, text): a PathLike or a str naming a file is a path; a str with a newline is the text itself."""
    if x is None:
        return None, None
    if isinstance(x, os.PathLike):
        return os.fspath(x), None
    if isinstance(x, str):
        if "\n" in x:
            return None, x
        return x, None
    raise TypeError(f"{what}: expected a path or the file's text, got {type(x).__name__}")


def run(
    job: Optional[Union[PathLike, str]] = None,
    config: Optional[Union[PathLike, str]] = None,
    seed: int = 0,
    *,
    device: Optional[str] = None,
    host: Optional[str] = None,
    precondition: Optional[str] = None,
    queue_map: Optional[str] = None,
    arbitration: Optional[str] = None,
    weights: Optional[str] = None,
    ionice: Optional[str] = None,
    verify: bool = False,
    plus: bool = False,
) -> Dict[str, Any]:
    """Simulate one fio job and return fio's JSON output as a dict.

    Same as ``nvmesim run JOB --output-format json`` with the same flags:
    the same bytes for the same inputs and seed (timestamps aside).

    Args:
        job: fio job file: a path, or the job file's text (any str with a newline).
            May be None when ``config`` has ``[[vm]]`` tables with guest jobs.
        config: machine config (TOML): a path or its text. None: the default machine.
        seed: seed of every random stream.
        device, host: preset names (see ``nvmesim presets``), overriding the config's.
        precondition: none | sequential | working-set | steady-state (default) | sustained.
        queue_map: a queue-map policy name (``policies()["queue_map"]``: per-core, rw-isolation, ...).
        arbitration: auto or a mechanism (``policies()["arbitration"]``: round-robin, ...).
        weights: WRR weights "HIGH:MEDIUM:LOW".
        ionice: run as under ``ionice -c CLASS [-n LEVEL]``, e.g. "2:0" or "idle".
        verify: turn on the device's verify mode.
        plus: ``json+`` (with the latency histogram bins).

    Raises:
        NvmesimError: with the message the CLI prints (file, line, option).
    """
    job_path, job_text = _file_or_text(job, "job")
    cfg_path, cfg_text = _file_or_text(config, "config")
    spec = {
        "job": None if job_text is None else {"path": "<job>", "text": job_text},
        "config": None if cfg_text is None else {"path": "<config>", "text": cfg_text},
        "seed": int(seed),
        "host": host,
        "device": device,
        "precondition": precondition,
        "queue_map": queue_map,
        "arbitration": arbitration,
        "weights": weights,
        "ionice": ionice,
        "verify": bool(verify),
    }
    text = _nvmesim.run(json.dumps(spec), job_path, cfg_path, plus)
    return json.loads(text)


SweepSpec = Union[PathLike, Dict[str, Any]]


def _default_out(spec: SweepSpec) -> Path:
    if isinstance(spec, dict):
        return Path("sweep-results")
    p = Path(spec)
    return p.with_name(p.stem + "-results")


def _plan(spec: SweepSpec) -> "_nvmesim.Plan":
    """The planned runs of a sweep file, or of a dict with the sweep file's keys
    (its relative paths are taken from the current directory)."""
    if isinstance(spec, dict):
        return _nvmesim.Plan.from_json(json.dumps(spec), os.getcwd())
    return _nvmesim.Plan(os.fspath(spec))


def sweep(
    spec: SweepSpec,
    backend: Literal["local", "ray"] = "local",
    address: Optional[str] = None,
    *,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    progress: bool = True,
) -> "pandas.DataFrame":  # noqa: F821
    """Run a sweep file and return its tidy results table.

    Same as ``nvmesim sweep SPEC --out OUT [--jobs N | --ray ADDRESS]``: one fio
    JSON per run under ``out``, plus ``out/results.csv`` and ``out/results.parquet``.
    Runs whose results exist are skipped (a sweep resumes); failed runs are rows with
    ``status == "failed"`` and their ``error``.

    Args:
        spec: the sweep TOML file, or a dict with its keys, e.g.
            ``{"job": "job.fio", "device": "null", "seeds": [0, 1],
            "vary": {"iodepth": {"from": 1, "to": 64, "factor": 2}}}``.
        backend: "local" (threads on this machine) or "ray" (one Ray task per run).
        address: Ray cluster address for backend="ray" ("auto", "local", "host:port");
            None: the running Ray instance if ``ray.init`` was called, else a new local one.
        out: output folder (default: ``<spec stem>-results`` next to the spec;
            ``sweep-results`` for a dict).
        jobs: local worker threads (default: every core).
        progress: progress bar on stderr (when it is a terminal).

    Returns:
        pandas.DataFrame: one row per run and direction (see :func:`load`).
    """
    out = Path(out) if out is not None else _default_out(spec)
    if backend == "local":
        plan = _plan(spec)
        if jobs is not None and jobs < 1:
            raise NvmesimError(f"jobs={jobs}: need at least one worker")
        plan.run_local(os.fspath(out), jobs, progress)
    elif backend == "ray":
        from .ray_backend import sweep_ray

        sweep_ray(_plan(spec), out, address=address, progress=progress)
    else:
        raise ValueError(f"backend={backend!r}: expected 'local' or 'ray'")
    return load(out)


def load(out: PathLike, format: Literal["parquet", "csv"] = "parquet") -> "pandas.DataFrame":  # noqa: F821
    """Load a sweep folder's results table (``results.parquet`` or ``results.csv``).

    Columns: ``run`` (the run's file under ``out`` without .json), one column per
    varied parameter, ``seed``, ``status`` (ok | failed | missing), ``error``,
    ``direction`` (read | write | trim), ``total_ios``, ``runtime_ms``, ``iops``,
    ``bw_bytes`` (B/s), ``bw_mib_s``, ``lat_mean_us``, ``clat_mean_us``,
    ``clat_p50_us`` ... ``clat_p99_99_us``, ``lat_max_us``.
    """
    import pandas as pd

    out = Path(out)
    if format == "parquet":
        return pd.read_parquet(out / "results.parquet")
    if format == "csv":
        return pd.read_csv(out / "results.csv", keep_default_na=False, na_values=[""])
    raise ValueError(f"format={format!r}: expected 'parquet' or 'csv'")


def load_runs(out: PathLike) -> Dict[str, Dict[str, Any]]:
    """Every run's fio JSON in a sweep folder, by run name (``seed=0/randread-4-1``)."""
    out = Path(out)
    runs: Dict[str, Dict[str, Any]] = {}
    for p in sorted(out.rglob("*.json")):
        name = p.relative_to(out).with_suffix("").as_posix()
        runs[name] = json.loads(p.read_text())
    return runs
