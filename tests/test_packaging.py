"""What a user installs is what the checkout runs: a wheel built from this source holds every file of the package,
bundled samples, task YAMLs and OpenCompass configs included (an editable install reads the checkout, so only a
built wheel shows a file that `package-data` forgot)."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _package_files() -> set[str]:
    root = REPO / "critic_tasks"
    return {p.relative_to(REPO).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_the_wheel_holds_every_file_of_the_package(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "critic_tasks", src / "critic_tasks", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(tmp_path / "out"), str(src)], capture_output=True, text=True, timeout=300)
    if built.returncode and "No module named pip" in built.stderr:
        pytest.skip("no pip in this interpreter to build a wheel with")
    assert built.returncode == 0, built.stderr[-2000:]
    wheel, = (tmp_path / "out").glob("critic_tasks-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_package_files() - shipped)
    assert not missing, f"{len(missing)} file(s) of the package are not in the wheel (pyproject's package-data): " \
                        f"{missing[:10]}"
    assert any("rmbench/sample_data/" in name for name in shipped)  # the test sees sample data at all
