"""The layout's rules, checked: harness imports only in their adapter folder, a core that runs without any harness,
no import cycles, lint clean, and a README whose Layout section names every package."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats

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


def _cycles(edges) -> list:
    """The cycles of the directed graph ``edges`` ((from, to) pairs), each as the nodes on it (first repeated)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found, state = [], {}

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_cycles():
    imports = ((m, n) for m in MODULES for n in MODULES if n != m and not m.startswith(n + ".")
               and any(i == n or i.startswith(n + ".") for i in IMPORTS[m]))
    assert _cycles(imports) == []


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    out = subprocess.run([ruff, "check", "critic_tasks", "tests", "benchmarks", "examples", "scripts"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:]


def _layout_blocks(layout: str) -> dict[str, str]:
    """The Layout tree read as its reader does: each ``name/`` entry (a line's first token, or a ``name/`` met inside
    its parent's text, e.g. ``correction/ (check: ...)``) owns the text of its own line and of the lines indented
    deeper below it. Keys are package paths relative to critic_tasks ('' for the package itself)."""
    lines = [line for line in layout.splitlines() if line.strip() and not line.startswith("```")]
    start = next(i for i, line in enumerate(lines) if line.strip() == "critic_tasks/")

    def block(i: int) -> str:
        indent = len(lines[i]) - len(lines[i].lstrip())
        out = [lines[i]]
        for line in lines[i + 1:]:
            if len(line) - len(line.lstrip()) <= indent:
                break
            out.append(line)
        return "\n".join(out)

    blocks = {"": block(start)}
    for pkg in sorted({p.parent.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("__init__.py")} - {"."},
                      key=lambda p: p.count("/")):
        parent, name = pkg.rpartition("/")[0], pkg.rpartition("/")[2]
        text = blocks.get(parent, "")
        tree_entry = re.search(rf"^[ ]*{re.escape(name)}/(?:[ ]{{2,}}|$)", text, flags=re.M)
        entry = tree_entry or re.search(rf"(?<![\w/.]){re.escape(name)}/", text)
        if entry is None:
            continue
        own = text[entry.start():]
        indent = len(own) - len(own.lstrip(" "))
        rest = own.split("\n")
        kept = [rest[0]]
        for line in rest[1:]:
            if len(line) - len(line.lstrip()) <= indent + (0 if tree_entry else -1):
                break
            kept.append(line)
        blocks[pkg] = "\n".join(kept)
    return blocks


def test_layout_names_every_package_and_module_in_its_own_folder():
    """Each module is named as a word (``name`` or ``name.py``) in its own package's entry of docs/architecture.md's
    Layout tree, not just anywhere on the page; every ``name.py`` the tree names exists there."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    blocks = _layout_blocks(text.split("## Layout", 1)[1].split("\n## ", 1)[0])
    missing, stale = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or "tasks" in rel.parts or "configs" in rel.parts or "sample_data" in rel.parts:
            continue
        pkg = rel.parent.as_posix() if rel.parent.as_posix() != "." else ""
        if not re.search(rf"(?<![\w/.]){re.escape(path.stem)}(\.py)?(?![\w/])", blocks.get(pkg, "")):
            missing.append(rel.as_posix())
    for pkg in {p.parent.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("__init__.py")} - {"."}:
        if pkg not in blocks and not any(part in ("tasks", "configs") for part in pkg.split("/")):
            missing.append(pkg + "/")
    for pkg, body in blocks.items():
        own = body
        for other, sub in blocks.items():  # a sub-package's text is its own
            if other != pkg and other.rpartition("/")[0] == pkg:
                own = own.replace(sub, "")
        for name in re.findall(r"(?<![\w/.])(\w+)\.py\b", own):
            if not any((PACKAGE / pkg).rglob(f"{name}.py")):  # a file of a sub-folder listed inline, e.g. tasks/
                stale.append(f"{pkg}/{name}.py")
    assert missing == [], f"docs/architecture.md's Layout does not name these in their own folder's entry: {missing}"
    assert stale == [], f"docs/architecture.md's Layout names modules that do not exist: {stale}"


# What lm-eval calls for a task, in its order, profiled: the files of our code entered (first entry order) and every
# call from one of our files into another (caller file, callee file). lm-eval builds a task's filter when it builds
# the task (before any generation), so the filter object is made before profiling; its batch step is profiled.
PROFILE = '''
import inspect, json, os, sys
import critic_tasks
from critic_tasks import engine
from critic_tasks.adapters.lm_eval import hooks

root = os.path.dirname(os.path.dirname(critic_tasks.__file__))
ours = os.path.join(root, "critic_tasks") + os.sep
seen, edges = [], set()

def profile(frame, event, arg):
    name = frame.f_code.co_filename
    if event == "call" and name.startswith(ours):
        name = os.path.relpath(name, root)
        if name not in seen:
            seen.append(name)
        caller = frame.f_back.f_code.co_filename if frame.f_back else ""
        # a generator (rate(r.parsed for r in records)) resumed by its consumer is data handed over, not a call back
        generator = frame.f_code.co_flags & inspect.CO_GENERATOR
        if caller.startswith(ours) and os.path.relpath(caller, root) != name and not generator:
            edges.add((os.path.relpath(caller, root), name))

names = hooks.registered_names()
%s
sys.setprofile(profile)
%s
sys.setprofile(None)
print(json.dumps({"seen": seen, "edges": sorted(edges), "value": value, "extra": extra}))
'''

# critic_feedback: each document's prompt and record, then the Spearman over the rows process_results routed to it
FEEDBACK = ('''
docs = engine.task_docs("critic_feedback_chat")
replies = [f"Decision: {i % 7 + 1}\\nbecause" for i in range(len(docs))]
spearman = names["aggregation"]["critic_likert_spearman"]
extra = [[i % 7 + 1 for i in range(len(docs))], [d["feedback_score"] for d in docs]]
''', '''
rows = []
for doc, reply in zip(docs, replies):
    hooks.doc_to_text(doc)
    rows.append(hooks.process_results(doc, [reply])["spearman"])
value = spearman(rows)
''')

# critic_correction on two code items (code_not_exec's medium and high one, each revised to its own response: the
# sample's high-quality code_not_exec response is correct, the medium one is not): the filter's batch step (the
# programs run in the sandbox's child processes, not profiled), each document's record, the pass rate
CORRECTION = ('''
docs = engine.task_docs("critic_correction_code_not_exec")[1:3]
replies = [[f"Revised:\\n```python\\n{d['generation']}\\n```"] for d in docs]
sandbox = names["filter"]["critic_sandbox"]()
pass_rate = names["aggregation"]["critic_correction_pass_rate"]
''', '''
kept = sandbox.apply(replies, docs)
rows = [hooks.process_results(doc, [k])["pass_rate"] for doc, k in zip(docs, kept)]
value = pass_rate(rows)
''' + '''
extra = [[d["quality"] for d in docs], [[c["status"] for c in row["checks"]] for row in rows]]
''')

TRACES = {"critic_feedback": (FEEDBACK, 8, "aggregation: critic_likert_spearman\n"),
          "critic_correction": (CORRECTION, 10, "function: critic_sandbox\n")}


@pytest.mark.parametrize("task", sorted(TRACES))
def test_the_documented_trace_is_the_code_path(task):
    """docs/architecture.md lists, per task, the files from its YAML to its printed metric: the task's YAML (one
    self-contained file, as lm-eval's gsm8k.yaml: no include chain) and utils.py, whose hooks it names, then exactly
    the files of our code that run while lm-eval's hooks do (prompt, filter, record, aggregation), in the order
    they are first entered: at most 8 files for critic_feedback, 10 for a code item of critic_correction. No call
    leads back into a file already on the way (the calls between our files form no cycle), and the metric is the
    one computed here by hand (scipy's Spearman; the sample's one correct code item of two)."""
    script, limit, names_its_scoring = TRACES[task]
    text = (REPO / "docs" / "architecture.md").read_text()
    listed = text.split(f"<!-- trace {task} -->\n```\n", 1)[1].split("```", 1)[0].split()
    assert len(listed) <= limit, listed
    task_yaml, utils, rest = listed[0], listed[1], listed[2:]
    assert task_yaml == f"critic_tasks/adapters/lm_eval/tasks/{task}.yaml"
    yaml_text = (REPO / task_yaml).read_text()
    assert "include:" not in yaml_text  # everything lm-eval reads for the task is in this one file
    assert "!function utils.process_results\n" in yaml_text and names_its_scoring in yaml_text
    assert utils == "critic_tasks/adapters/lm_eval/tasks/utils.py"
    assert "from critic_tasks.adapters.lm_eval.hooks import" in (REPO / utils).read_text()
    env = {**os.environ, "CRITICBENCH_DATA_DIR": "sample", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", PROFILE % script], capture_output=True, text=True, cwd=REPO, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["seen"] == rest
    assert _cycles(found["edges"]) == []
    if task == "critic_feedback":
        predicted, human = found["extra"]
        assert found["value"] == pytest.approx(100 * stats.spearmanr(predicted, human).statistic, abs=1e-9)
    else:
        assert found["extra"] == [["med", "high"], [["failed"], ["passed"]]]
        assert found["value"] == 50.0  # one domain, one of its two items passes
