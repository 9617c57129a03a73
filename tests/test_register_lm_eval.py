"""critic-eval register-lm-eval: plain `lm_eval --tasks critic_feedback,critic_meta` after registering, and --undo.

The unit tests work on a small fake lm-eval tree (never on the shared environment's lm-eval); the last test makes a
fresh virtual environment under the system temp dir, installs this checkout into it (not editable, no system site
packages), and runs the literal command there with lm-eval's `dummy` model.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from critic_tasks import cli, registry
from critic_tasks.adapters import lm_eval as adapter
from critic_tasks.adapters.lm_eval import register

REPO = Path(__file__).resolve().parents[1]
REAL_INSTALLED = register.installed


def tree_state(root: Path) -> dict:
    """Every entry under root: directories, and files with their mode and content hash (symlinks: their target)."""
    state = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            state[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            state[rel] = ("dir",)
        else:
            state[rel] = ("file", path.stat().st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
    return state


def fake_lm_eval(site: Path, version: str = "0.4.13", entry_points: bool = False) -> register.LmEval:
    """An importable lm_eval with a dist-info of that version and a one-task tree."""
    pkg = site / "lm_eval"
    (pkg / "tasks" / "hellaswag").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    manager = "from pathlib import Path\n"
    if entry_points:  # as lm-eval would once it reads installed packages' task folders (PR #4015)
        manager += 'from importlib.metadata import entry_points\nfor ep in entry_points(group="lm_eval.tasks"):\n    pass\n'
    (pkg / "tasks" / "manager.py").write_text(manager)
    (pkg / "tasks" / "hellaswag" / "hellaswag.yaml").write_text("task: hellaswag\ndataset_path: hellaswag\n")
    dist = site / f"lm_eval-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: lm_eval\nVersion: {version}\n")
    return register.LmEval(pkg, version)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    lm = fake_lm_eval(tmp_path / "site")
    monkeypatch.setattr(register, "installed", lambda: lm)
    return lm


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.slow
def test_register_places_include_only_files_lm_eval_indexes_and_undo_restores(fake, capsys):
    before = tree_state(fake.package)
    assert cli.main(["register-lm-eval"]) == 0
    folder = fake.package / "tasks" / "critic_tasks"
    names = {p.name for p in folder.iterdir()}
    expected = {f"{n}.yaml" for n in [*registry.TASKS, *registry.GROUPS]}
    assert names == expected | {"utils.py", "critic_tasks_registration.json"}
    for name in expected:  # each file only includes ours, whose task / group is that name
        text = (folder / name).read_text()
        target = Path(re.search(r"^include: (.+)$", text, re.M).group(1))
        assert [line for line in text.splitlines() if not line.startswith("#")] == [f"include: {target}"]
        assert target.is_file() and target.parent == Path(adapter.tasks_dir()).resolve()
        assert re.search(rf"^(task|group): {re.escape(name[:-5])}$", target.read_text(), re.M), name
    assert (folder / "utils.py").read_text().count("\n") == 1
    # lm-eval's own index of its tree now holds our tasks, groups and tags
    from lm_eval.tasks._index import Kind, TaskIndex

    index = TaskIndex.build([fake.package / "tasks"])
    assert index["critic_feedback"].kind == Kind.TASK and index["critic_meta"].kind == Kind.TASK
    assert index["critic"].kind == Kind.GROUP and index["critic_per_domain"].kind == Kind.TAG
    assert index["hellaswag"].kind == Kind.TASK
    # idempotent: a second run leaves the same tree; critic-eval then stops adding --include_path (no duplicates)
    after = tree_state(fake.package)
    assert cli.main(["register-lm-eval"]) == 0
    assert tree_state(fake.package) == after
    assert adapter.own_path() == []
    capsys.readouterr()
    assert cli.main(["register-lm-eval", "--undo"]) == 0
    assert tree_state(fake.package) == before
    assert adapter.own_path() == [adapter.tasks_dir()]
    capsys.readouterr()
    assert cli.main(["register-lm-eval", "--undo"]) == 0
    assert "nothing to undo" in capsys.readouterr().out


def test_undo_removes_the_shims_bytecode_too(fake):
    before = tree_state(fake.package)
    assert cli.main(["register-lm-eval"]) == 0
    folder = fake.package / "tasks" / "critic_tasks"
    subprocess.run([sys.executable, "-m", "py_compile", str(folder / "utils.py")], check=True)  # as an import would
    assert list((folder / "__pycache__").glob("utils.*.pyc"))
    assert cli.main(["register-lm-eval", "--undo"]) == 0
    assert tree_state(fake.package) == before


def test_a_folder_it_did_not_make_is_never_touched(fake, capsys):
    folder = fake.package / "tasks" / "critic_tasks"
    folder.mkdir()
    (folder / "mine.yaml").write_text("task: mine\n")
    before = tree_state(fake.package)
    assert cli.main(["register-lm-eval"]) == 2
    line = one_error_line(capsys)
    assert str(folder) in line and "not made by critic-eval register-lm-eval" in line
    assert cli.main(["register-lm-eval", "--undo"]) == 2
    assert "not touching it" in one_error_line(capsys)
    assert tree_state(fake.package) == before


def test_a_file_added_to_our_folder_survives_undo(fake, capsys):
    assert cli.main(["register-lm-eval"]) == 0
    extra = fake.package / "tasks" / "critic_tasks" / "notes.txt"
    extra.write_text("someone's file\n")
    assert cli.main(["register-lm-eval", "--undo"]) == 0
    assert "notes.txt (not ours)" in capsys.readouterr().out
    assert [p.name for p in extra.parent.iterdir()] == ["notes.txt"]


def test_unknown_lm_eval_version_is_refused(tmp_path, monkeypatch, capsys):
    lm = fake_lm_eval(tmp_path / "site", version="0.4.99")
    monkeypatch.setattr(register, "installed", lambda: lm)
    before = tree_state(lm.package)
    assert cli.main(["register-lm-eval"]) == 2
    line = one_error_line(capsys)
    assert "lm-eval 0.4.99 is not a version" in line and "0.4.13" in line and "--include_path" in line
    assert tree_state(lm.package) == before


def test_an_lm_eval_that_reads_entry_points_needs_nothing(tmp_path, monkeypatch, capsys):
    lm = fake_lm_eval(tmp_path / "site", version="0.5.0", entry_points=True)
    monkeypatch.setattr(register, "installed", lambda: lm)
    before = tree_state(lm.package)
    assert cli.main(["register-lm-eval"]) == 0
    out = capsys.readouterr().out
    assert "reads the `lm_eval.tasks` entry point" in out and "nothing done" in out
    assert tree_state(lm.package) == before
    assert adapter.own_path() == []  # critic-eval leaves --include_path off there too (no task indexed twice)
    # the installed lm-eval (0.4.13) does not: registering is what makes the plain command work there
    real = REAL_INSTALLED()
    assert real.version == "0.4.13" and not register.reads_entry_points(real)


@pytest.mark.slow
def test_read_only_site_packages_is_one_line(tmp_path):
    """A real read-only mount (a private mount namespace), through the installed-lm-eval lookup of a subprocess."""
    site = tmp_path / "site"
    lm = fake_lm_eval(site)
    before = tree_state(lm.package)
    command = (f"mount --bind {lm.package} {lm.package} && mount -o remount,ro,bind {lm.package} || exit 77; "
               f"exec {sys.executable} -m critic_tasks.cli register-lm-eval")
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}"}
    try:
        out = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=120)
    except FileNotFoundError:
        pytest.skip("no unshare here for a read-only mount")
    if out.returncode == 77 or "unshare:" in out.stderr:
        pytest.skip(f"cannot make a read-only mount here: {out.stderr.strip()[:200]}")
    assert out.returncode == 2, out.stderr
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and "cannot write into lm-eval's task tree" in err[0] and "Read-only file system" in err[0]
    assert str(lm.package / "tasks") in err[0] and "--include_path" in err[0]
    assert tree_state(lm.package) == before


def test_lm_eval_config_sets_include_path(tmp_path, capsys):
    path = tmp_path / "critic.yaml"
    assert cli.main(["lm-eval-config", "-o", str(path)]) == 0
    import yaml

    assert yaml.safe_load(path.read_text()) == {"include_path": str(Path(adapter.tasks_dir()).resolve())}
    capsys.readouterr()
    assert cli.main(["lm-eval-config", "-o", str(tmp_path / "missing" / "critic.yaml")]) == 2
    assert "cannot write the config" in one_error_line(capsys)


# ----------------------------------------------------------------------------- the literal command, fresh venv


def _run(args, cwd, timeout=600, **env):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "CRITICBENCH_DATA_DIR": "sample", **env})


@pytest.fixture(scope="module")
def fresh_venv():
    """A new venv under the system temp dir with this checkout installed from a copy of its source (no editable
    install, no system site packages; dependencies from the configured package index)."""
    root = Path(tempfile.mkdtemp(prefix="critic-tasks-fresh-venv-"))
    try:
        src = root / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(REPO / name, src / name)
        shutil.copytree(REPO / "critic_tasks", src / "critic_tasks", ignore=shutil.ignore_patterns("__pycache__"))
        made = _run([sys.executable, "-m", "venv", root / "venv"], root, timeout=300)
        if made.returncode:
            pytest.skip(f"cannot make a venv: {made.stderr.strip()[-300:]}")
        installed = _run([root / "venv" / "bin" / "pip", "install", "-q", src], root, timeout=1200)
        if installed.returncode:
            pytest.skip(f"pip could not install critic-tasks into a fresh venv: {installed.stderr.strip()[-500:]}")
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_literal_lm_eval_command_in_a_fresh_venv(fresh_venv):
    bin_ = fresh_venv / "venv" / "bin"
    where = _run([bin_ / "python", "-c", "import importlib.util as u; "
                  "print(list(u.find_spec('lm_eval').submodule_search_locations)[0])"], fresh_venv)
    lm_tree = Path(where.stdout.strip())
    assert str(lm_tree).startswith(str(fresh_venv))  # the venv's own lm-eval, not the shared one
    before = tree_state(lm_tree)
    literal = [bin_ / "lm_eval", "--tasks", "critic_feedback,critic_meta", "--model", "dummy", "--limit", "2"]

    not_yet = _run(literal, fresh_venv)
    assert not_yet.returncode != 0 and "Tasks not found: critic_feedback, critic_meta" in not_yet.stderr

    done = _run([bin_ / "critic-eval", "register-lm-eval"], fresh_venv)
    assert done.returncode == 0 and "registered" in done.stdout, done.stderr
    assert _run([bin_ / "critic-eval", "register-lm-eval"], fresh_venv).returncode == 0  # idempotent

    run = _run([*literal, "--output_path", fresh_venv / "out"], fresh_venv)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(next((fresh_venv / "out").rglob("results_*.json")).read_text())
    assert results["n-samples"]["critic_feedback"]["effective"] == 2
    assert results["n-samples"]["critic_meta"]["effective"] == 2
    for task in ("critic_feedback", "critic_meta"):  # the dummy model answers "lol": no score in it
        assert results["results"][task]["parse_rate,none"] == 0
        assert results["results"][task]["labels_available,none"] == 100

    # critic-eval itself now leaves --include_path off: no task is indexed twice
    ours = _run([bin_ / "critic-eval", "--tasks", "critic_meta", "--model", "dummy", "--limit", "1"], fresh_venv)
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert "overrides existing task" not in ours.stderr

    undone = _run([bin_ / "critic-eval", "register-lm-eval", "--undo"], fresh_venv)
    assert undone.returncode == 0, undone.stderr
    assert tree_state(lm_tree) == before  # byte for byte, modes included

    # CI without touching lm-eval: a --config file that sets include_path
    config = fresh_venv / "critic.yaml"
    assert _run([bin_ / "critic-eval", "lm-eval-config", "-o", config], fresh_venv).returncode == 0
    via_config = _run([bin_ / "lm_eval", "--config", config, *literal[1:], "--output_path", fresh_venv / "cfg"],
                      fresh_venv)
    assert via_config.returncode == 0, via_config.stderr[-3000:]
    results = json.loads(next((fresh_venv / "cfg").rglob("results_*.json")).read_text())
    assert set(results["results"]) == {"critic_feedback", "critic_meta"}
    assert tree_state(lm_tree) == before
