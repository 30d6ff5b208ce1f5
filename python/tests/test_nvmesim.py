"""The Python package: runs equal the CLI's, errors carry the CLI's message,
sweeps come back as DataFrames, resume, and record failures."""

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import nvmesim
from conftest import JOB

NO_TIME = ("timestamp", "timestamp_ms", "time")


def strip_times(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in NO_TIME}


def test_run_equals_the_cli(cli, tmp_path):
    out = tmp_path / "cli.json"
    subprocess.run(
        [cli, "run", JOB, "--device", "null", "--seed", "3", "--output-format", "json", "--output", out, "-q"],
        check=True,
    )
    from_cli = json.loads(out.read_text())
    from_py = nvmesim.run(str(JOB), device="null", seed=3)
    assert strip_times(from_py) == strip_times(from_cli)
    assert from_py["jobs"][0]["read"]["iops"] > 0
    # A job given as text runs the same.
    assert strip_times(nvmesim.run(JOB.read_text(), device="null", seed=3))["jobs"] == from_cli["jobs"]


def test_seed_changes_a_random_run_and_is_repeatable():
    job = "[j]\nioengine=libaio\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=8\nnumber_ios=2000\n"
    a = nvmesim.run(job, device="intel-750-400g", precondition="working-set", seed=1)
    b = nvmesim.run(job, device="intel-750-400g", precondition="working-set", seed=1)
    c = nvmesim.run(job, device="intel-750-400g", precondition="working-set", seed=2)
    assert strip_times(a) == strip_times(b)
    assert a["jobs"][0]["read"]["clat_ns"] != c["jobs"][0]["read"]["clat_ns"]


@pytest.mark.parametrize(
    "job_text, flags",
    [
        ("[j]\nrw=randread\nbogus_option=1\n", []),
        ("[j]\nrw=randread\niodepth=zero\n", []),
        ("[j]\nfilename=/dev/nvme0n1\nrw=randread\nnumber_ios=10\n", ["--device", "no-such-drive"]),
        ("[j]\nfilename=/dev/nvme0n1\nrw=randread\nnumber_ios=10\n", ["--precondition", "dusty"]),
    ],
)
def test_errors_carry_the_cli_message(cli, tmp_path, job_text, flags):
    job = tmp_path / "bad.fio"
    job.write_text(job_text)
    r = subprocess.run([cli, "run", job, *flags, "-q"], capture_output=True, text=True)
    assert r.returncode != 0
    cli_msg = r.stderr.strip().removeprefix("nvmesim: ")
    kw = {}
    if flags:
        kw[flags[0].removeprefix("--")] = flags[1]
    with pytest.raises(nvmesim.NvmesimError) as e:
        nvmesim.run(str(job), **kw)
    assert str(e.value) == cli_msg
    assert str(job) in cli_msg or flags  # job-file errors name the file


def test_missing_job_file_raises():
    with pytest.raises(nvmesim.NvmesimError, match="no/such.fio: unable to open job file"):
        nvmesim.run("no/such.fio")


def test_text_given_by_value_has_the_file_bounds():
    # A job given as text gets a job file's bounds before anything is built.
    long = "[j]\nfilename=" + "x" * 9000 + "\nrw=read\n"
    with pytest.raises(nvmesim.NvmesimError, match="<job>:2: a line longer than 8192 bytes"):
        nvmesim.run(long)
    with pytest.raises(nvmesim.NvmesimError, match="<config>: larger than 16 MiB"):
        nvmesim.run("[j]\nrw=read\n", config="#\n" * (9 << 20))


def test_sweep_local_is_a_tidy_table_and_resumes(sweep_file, tmp_path):
    out = tmp_path / "out"
    df = nvmesim.sweep(sweep_file, out=out, jobs=2, progress=False)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 24  # 2 rw x 3 iodepth x 2 numjobs x 2 seeds, one direction each
    assert list(df.columns[:5]) == ["run", "rw", "iodepth", "numjobs", "seed"]
    assert set(df.status) == {"ok"}
    assert (df.direction == df.rw.str.removeprefix("rand")).all()
    # Queueing: on an unsaturated drive more depth gives more random-read IOPS.
    rr = df[(df.rw == "randread") & (df.numjobs == 1)].groupby("iodepth").iops.mean()
    assert rr.loc[1] < rr.loc[4] < rr.loc[16]
    # fio-plot / bench-fio names, one folder per seed.
    assert (out / "seed=0" / "randread-4-2.json").is_file()
    before = (out / "results.parquet").read_bytes()
    mtime = (out / "seed=0" / "randread-4-2.json").stat().st_mtime_ns
    df2 = nvmesim.sweep(sweep_file, out=out, jobs=2, progress=False)
    assert (out / "seed=0" / "randread-4-2.json").stat().st_mtime_ns == mtime  # skipped, not rerun
    assert (out / "results.parquet").read_bytes() == before
    pd.testing.assert_frame_equal(df, df2)
    # load() reads either format to the same figures.
    csv = nvmesim.load(out, format="csv")
    assert list(csv.columns) == list(df.columns)
    assert (csv.iops.values == df.iops.values).all()
    runs = nvmesim.load_runs(out)
    assert len(runs) == 24 and "jobs" in runs["seed=1/randwrite-16-1"]


def test_sweep_records_failures_and_goes_on(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'job = "{JOB.as_posix()}"\n[set]\nruntime = "5ms"\nramp_time = 0\n'
        '[vary]\ndevice = ["null", "no-such-drive"]\n'
    )
    df = nvmesim.sweep(spec, out=tmp_path / "o", progress=False)
    ok = df[df.device == "null"]
    bad = df[df.device == "no-such-drive"]
    assert list(ok.status) == ["ok"] and ok.iops.iloc[0] > 0
    assert list(bad.status) == ["failed"]
    assert "no-such-drive" in bad.error.iloc[0]
    assert (tmp_path / "o" / "device=no-such-drive,seed=0" / "randread-32-4.error.txt").is_file()


def test_bad_sweep_raises_with_the_key(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'job = "{JOB.as_posix()}"\n[vary]\niodepht = [1, 2]\n')
    with pytest.raises(nvmesim.NvmesimError, match=r"s\.toml: \[vary\] iodepht = 1: .*iodepht"):
        nvmesim.sweep(spec, out=tmp_path / "o")


def test_sweep_from_a_dict_equals_the_file(sweep_file, tmp_path):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    spec = tomllib.loads(sweep_file.read_text())
    a = nvmesim.sweep(sweep_file, out=tmp_path / "file", progress=False)
    b = nvmesim.sweep(spec, out=tmp_path / "dict", progress=False)
    assert (tmp_path / "file" / "results.parquet").read_bytes() == (tmp_path / "dict" / "results.parquet").read_bytes()
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(nvmesim.NvmesimError, match="<sweep dict>: unknown key 'sedes'"):
        nvmesim.sweep({"job": spec["job"], "sedes": [1]}, out=tmp_path / "bad")


def test_policies_name_what_run_takes():
    p = nvmesim.policies()
    assert p["queue_map"][0] == "per-core" and "read-size-split" in p["queue_map"]
    assert p["arbitration"][:2] == ["auto", "round-robin"] and "strict-priority" in p["arbitration"]
    job = "[j]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nnumber_ios=100\n"
    out = nvmesim.run(job, device="null", queue_map=p["queue_map"][1], arbitration=p["arbitration"][1])
    assert out["jobs"][0]["read"]["total_ios"] == 100
    with pytest.raises(nvmesim.NvmesimError, match="per-core"):
        nvmesim.run(job, device="null", queue_map="no-such-map")
