"""Shared fixtures: a small sweep on the null device and the intel-750 preset."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "examples" / "randread-qd32.fio"


def nvmesim_binary() -> Path:
    """The CLI built by `cargo build --release` (./test-all builds it first)."""
    exe = REPO / "target" / "release" / "nvmesim"
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=REPO, check=True)
    return exe


@pytest.fixture(scope="session")
def cli() -> Path:
    return nvmesim_binary()


SWEEP = """
job = "{job}"
device = "intel-750-400g"
precondition = "working-set"
seeds = [0, 1]

[set]
runtime = "40ms"
ramp_time = "5ms"
size = "256m"

[vary]
rw = ["randread", "randwrite"]
iodepth = {{ from = 1, to = 16, factor = 4 }}
numjobs = [1, 2]
"""


@pytest.fixture()
def sweep_file(tmp_path: Path) -> Path:
    """A 24-run sweep over rw x iodepth x numjobs x 2 seeds (each run ~10 ms of wall time)."""
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP.format(job=JOB.as_posix()))
    return p
