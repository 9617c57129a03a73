"""The layout's rules, checked: harness imports only in their adapter folder, a core that runs without any harness,
no import cycles, lint clean, and a README whose Layout section names every package."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "critic_tasks"
HARNESSES = {"lm_eval": "adapters/lm_eval", "opencompass": "adapters/opencompass"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every module named by an import statement anywhere in the file (function bodies included)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


MODULES = _modules()
IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_harness_imported_only_in_its_adapter_folder(harness):
    folder = PACKAGE / HARNESSES[harness]
    offenders = [str(MODULES[m].relative_to(REPO)) for m, imps in IMPORTS.items()
                 if any(i == harness or i.startswith(harness + ".") for i in imps)
                 and folder not in MODULES[m].parents]
    assert offenders == [], f"{harness} imported outside {HARNESSES[harness]}/"


def test_core_runs_without_any_harness():
    """Import every module outside the adapters: neither lm_eval nor opencompass gets loaded."""
    # prelude.py, boot.py and zygote.py are program text the sandbox runs, not modules of the package
    names = sorted(m for m in MODULES if ".adapters" not in m and not m.endswith((".prelude", ".boot", ".zygote")))
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    importlib.import_module(name)\n"
            "print(sorted(h for h in ('lm_eval', 'opencompass') if h in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
    assert len(names) > 30  # the check covered the tree, not an empty list


def test_no_import_cycles():
    graph = {m: {n for n in MODULES if n != m and not m.startswith(n + ".")
                 and any(i == n or i.startswith(n + ".") for i in IMPORTS[m])} for m in MODULES}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    out = subprocess.run([ruff, "check", "critic_tasks", "tests", "benchmarks", "examples", "scripts"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:]


def test_readme_layout_names_every_package_and_module():
    readme = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")  # the Layout moved there from README.md
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    top = {p.name for p in PACKAGE.iterdir() if (p.is_dir() and (p / "__init__.py").exists())
           or (p.suffix == ".py" and p.name != "__init__.py")}
    nested = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.glob("*/*") if p.suffix == ".py"
              and p.name != "__init__.py"} | {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.glob("*/*")
                                              if p.is_dir() and (p / "__init__.py").exists()}
    missing = sorted(n for n in top | {Path(n).name for n in nested} if Path(n).stem not in layout)
    assert missing == [], f"docs/architecture.md's Layout section does not mention: {missing}"


TRACE = '''
import os, sys
import critic_tasks
from critic_tasks import engine
from critic_tasks.adapters.lm_eval import hooks

root = os.path.dirname(os.path.dirname(critic_tasks.__file__))
docs = engine.task_docs("critic_feedback_chat")[:6]
replies = [f"Score: {i % 7 + 1}\\nbecause" for i in range(len(docs))]
seen = []

def profile(frame, event, arg):
    name = frame.f_code.co_filename
    if event == "call" and name.startswith(os.path.join(root, "critic_tasks")):
        name = os.path.relpath(name, root)
        if name not in seen:
            seen.append(name)

rows = []
sys.setprofile(profile)  # what lm-eval calls, in its order: prompt, per-document record, aggregation
for doc, reply in zip(docs, replies):
    hooks.doc_to_text(doc)
    rows.append(hooks.process_results(doc, [reply])["spearman"])
hooks.aggregate("likert", "spearman", rows)
sys.setprofile(None)
print("\\n".join(seen))
'''


def test_the_documented_trace_is_the_code_path():
    """docs/architecture.md lists the files from critic_feedback's YAML to its printed Spearman: the YAML files lm-eval
    reads (each including the next, the last naming utils.py's hooks), then exactly the files of our code that run
    for a document's prompt, its record and the Spearman, in the order they are first entered."""
    text = (REPO / "docs" / "architecture.md").read_text()
    listed = text.split("<!-- trace critic_feedback -->\n```\n", 1)[1].split("```", 1)[0].split()
    yaml_files, rest = listed[:4], listed[4:]
    assert [Path(f).name for f in yaml_files] == ["critic_feedback.yaml", "_feedback_yaml", "_template_yaml", "utils.py"]
    for outer, inner in zip(yaml_files, yaml_files[1:3]):
        assert f"include: {Path(inner).name}\n" in (REPO / outer).read_text()
    assert "!function utils.process_results" in (REPO / yaml_files[2]).read_text()
    assert "from critic_tasks.adapters.lm_eval.hooks import" in (REPO / yaml_files[3]).read_text()
    env = {**os.environ, "CRITICBENCH_DATA_DIR": "sample", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", TRACE], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == rest
