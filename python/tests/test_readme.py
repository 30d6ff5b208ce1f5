"""The Python snippet of docs/sweeps.md (the README links to it) runs as written
(from the repository root)."""

import os
import re

from conftest import REPO


def test_readme_python_snippet_runs(capsys):
    text = (REPO / "docs" / "sweeps.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/sweeps.md has a python block"
    here = os.getcwd()
    os.chdir(REPO)
    try:
        for code in blocks:
            exec(compile(code, "docs/sweeps.md", "exec"), {})
    finally:
        os.chdir(here)
    printed = capsys.readouterr().out
    assert re.search(r"^\d+(\.\d+)?$", printed.splitlines()[0]), printed  # the IOPS figure
    assert "randread" in printed and "iodepth" in printed  # the groupby table
