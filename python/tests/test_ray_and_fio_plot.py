"""The Ray backend gives the local backend's table byte for byte; fio-plot
draws a sweep's JSON files directly (headless)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nvmesim

ray = pytest.importorskip("ray", reason="pip install '.[test]' brings ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def without_times(p: Path) -> dict:
    d = json.loads(p.read_text())
    for k in ("timestamp", "timestamp_ms", "time"):
        d.pop(k, None)
    return d


def test_ray_backend_equals_local(local_ray, sweep_file, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "ray"
    a = nvmesim.sweep(sweep_file, out=local, jobs=2, progress=False)
    b = nvmesim.sweep(sweep_file, backend="ray", out=remote, progress=False)
    assert len(a) == len(b) == 24
    for f in ("results.csv", "results.parquet"):
        assert (local / f).read_bytes() == (remote / f).read_bytes(), f
    names = sorted(p.relative_to(local) for p in local.rglob("*.json"))
    assert names == sorted(p.relative_to(remote) for p in remote.rglob("*.json"))
    for n in names:
        assert without_times(local / n) == without_times(remote / n), n


def test_cli_ray_flag(cli, sweep_file, tmp_path):
    """`nvmesim sweep --ray local` drives the same backend through the package."""
    local, remote = tmp_path / "local", tmp_path / "ray"
    subprocess.run([cli, "sweep", sweep_file, "--out", local, "-q"], check=True)
    env = dict(os.environ, NVMESIM_PYTHON=sys.executable, RAY_AUTH_MODE="disabled")
    subprocess.run([cli, "sweep", sweep_file, "--out", remote, "--ray", "local", "-q"], check=True, env=env)
    assert (local / "results.csv").read_bytes() == (remote / "results.csv").read_bytes()


def test_fio_plot_draws_a_sweep(sweep_file, tmp_path):
    exe = shutil.which("fio-plot") or str(Path(sys.executable).parent / "fio-plot")
    if not Path(exe).exists():
        pytest.skip("fio-plot not installed (pip install '.[test]')")
    out = tmp_path / "out"
    nvmesim.sweep(sweep_file, out=out, progress=False)
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    for args, png in [
        (["-l", "-r", "randread", "-n", "1"], "qd.png"),
        (["-N", "-r", "randwrite", "-d", "4"], "nj.png"),
        (["-H", "-r", "randread", "-d", "16", "-n", "1"], "hist.png"),
    ]:
        r = subprocess.run(
            [exe, "-i", out / "seed=0", "-T", "nvmesim sweep", *args, "-o", png],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        img = (tmp_path / png).read_bytes()
        assert img[:8] == b"\x89PNG\r\n\x1a\n" and len(img) > 20_000, png


CAL_TARGETS = """
name = "ray-check"
base = "{base}"
free = ["ssd.nand.read_ns_by_page_type=20us..120us", "ssd.nand.dies_per_channel=1..3"]

[[target]]
name = "rr"
job_text = \"\"\"
[rr]
ioengine=libaio
direct=1
filename=/dev/nvme0n1
rw=randread
bs=4k
iodepth=8
time_based=1
runtime=40ms
\"\"\"
metric = "read_iops"
observed = 40000
"""


def test_cli_calibrate_ray_equals_local(cli, tmp_path):
    """`nvmesim calibrate --ray local` runs the candidates as Ray tasks and writes the same config."""
    base = Path(__file__).resolve().parents[2] / "tests" / "data" / "tiny-ssd.toml"
    t = tmp_path / "targets.toml"
    t.write_text(CAL_TARGETS.format(base=base))
    local, remote = tmp_path / "local", tmp_path / "ray"
    subprocess.run([cli, "calibrate", t, "--out", local, "-q", "--iters", "6"], check=True)
    env = dict(os.environ, NVMESIM_PYTHON=sys.executable, RAY_AUTH_MODE="disabled")
    subprocess.run([cli, "calibrate", t, "--out", remote, "-q", "--iters", "6", "--ray", "local"], check=True, env=env)
    assert (local / "ray-check.toml").read_text() == (remote / "ray-check.toml").read_text()
