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


def _loads_by_name(tree: ast.AST) -> bool:
    """The file imports a module named by a string at run time (``importlib.import_module(x)``, ``__import__(x)``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__"):
                return True
    return False


def _imports(name: str, path: Path, modules=None) -> set[str]:
    """Every module named by an import statement anywhere in the file (function bodies included), and, in a file that
    imports modules by name at run time (importlib), every string in it that names a module of ours: a cycle
    through ``importlib.import_module`` is still a cycle."""
    found = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if _loads_by_name(tree):
        found |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and isinstance(node.value, str) and node.value in (MODULES if modules is None else modules)}
    for node in ast.walk(tree):
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


def test_no_arrow_back_up_into_the_adapters_or_the_cli():
    """Only the adapters and the CLI import an adapter; only the CLI (and ``python -m``) imports the CLI: the core,
    the protocols, the registry, the engine, the chance lines and the reports read neither (the package's facade,
    ``task_manager()`` / ``tasks_dir()``, and the generator sit at the top with them) (reports once reached
    into adapters/lm_eval/ranks.py for the rank rows, which now live in core/rank_rows.py)."""
    above = ("critic_tasks.adapters", "critic_tasks.cli")
    entry_points = ("critic_tasks", "critic_tasks.generate")  # the package's facade and the generator: the top too
    offenders = sorted(f"{m} -> {i}" for m, imps in IMPORTS.items() for i in imps
                       if not m.startswith(above) and m not in entry_points and i.startswith(above))
    assert offenders == []
    assert any(i.startswith("critic_tasks.core.rank_rows") for i in IMPORTS["critic_tasks.reports.results"])


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


def _import_edges(imports: dict[str, set[str]]):
    return ((m, n) for m in imports for n in imports if n != m and not m.startswith(n + ".")
            and any(i == n or i.startswith(n + ".") for i in imports[m]))


def test_no_import_cycles():
    assert _cycles(_import_edges(IMPORTS)) == []


def test_the_cycle_check_sees_imports_made_by_name(tmp_path):
    """Issue 45: ``hookspecs.plugin_manager()`` loaded ``sandbox.executor`` through ``importlib`` while the executor
    imported ``hookspecs``, a cycle the import statements alone do not show. Here the same shape, two files: the
    check finds it, and misses it when only import statements count."""
    (tmp_path / "hooks.py").write_text('import importlib\nBUILTIN = ("pkg.runner",)\n'
                                       "def load():\n    return [importlib.import_module(m) for m in BUILTIN]\n")
    (tmp_path / "runner.py").write_text("from pkg.hooks import load\n")
    modules = {"pkg.hooks": tmp_path / "hooks.py", "pkg.runner": tmp_path / "runner.py"}
    imports = {m: _imports(m, p, modules) for m, p in modules.items()}
    assert _cycles(_import_edges(imports)) == [["pkg.hooks", "pkg.runner", "pkg.hooks"]]
    statements_only = {**imports, "pkg.hooks": imports["pkg.hooks"] - {"pkg.runner"}}
    assert _cycles(_import_edges(statements_only)) == []


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


# What a reader opens, from a task's YAML to its printed number, measured in a fresh process while lm-eval builds the
# task (reading the YAML, executing utils.py, loading the documents: the bundled samples), makes each prompt, filters
# the replies, makes each document's record and aggregates. A file counts where a function of it runs (module bodies
# run by imports aside: importing is not reading), where the path reads a table of it (a module-level name loaded by a
# function that ran: registry.TASK_KINDS, registry.METRICS; a class of ours named there), and where its text is
# pasted into a program the sandbox runs; the sandbox (sandbox/ and the programs that run inside it) is one unit.
# Files are listed in the order first met. A return is counted as a reader meets it (issue 45): opening a file already
# read and left, to read a top-level definition not read before there (at the opening, or reading on in that file),
# at most once per file in each of lm-eval's steps; going back up the call stack does not count. The measuring
# script: tests/reader_trace.py.

# task -> (documents traced, the most files, the most returns) the house reaches now: a change may only lower them
TRACES = {"critic_feedback": ("all", 12, 6), "critic_judgebench": ("all", 16, 5),
          "critic_correction": ("code_not_exec", 15, 11)}
# issue 45's targets (files, returns), not met yet: test_the_traces_meet_issue_45s_targets fails until they are
TARGETS = {"critic_feedback": (10, 2), "critic_judgebench": (10, 2), "critic_correction": (14, 3)}


def _trace(task: str) -> dict:
    picked = TRACES[task][0]
    env = {**os.environ, "CRITICBENCH_DATA_DIR": "sample", "JUDGEBENCH_DATA_DIR": "sample", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(REPO / "tests" / "reader_trace.py"), str(REPO), task, picked],
                         capture_output=True, text=True,
                         cwd=REPO, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("task", sorted(TRACES))
def test_the_trace_a_reader_follows_is_documented_and_short(task):
    """docs/architecture.md lists, per task, every file a reader opens from the task's YAML to its printed number,
    in the order met, and its count of files and returns: exactly the measured ones, within today's limits. The
    number is the one computed here by hand (scipy's Spearman; the sample's one correct code item of two; three of
    the five JudgeBench pairs judged right in both orders)."""
    _, limit, most_returns = TRACES[task]
    found = _trace(task)
    text = (REPO / "docs" / "architecture.md").read_text()
    listed = text.split(f"<!-- trace {task} -->\n```\n", 1)[1].split("```", 1)[0].split()
    measured = "\n".join(found["order"])
    assert listed == found["order"], f"docs/architecture.md's {task} trace is not the measured one:\n{measured}"
    assert len(found["order"]) <= limit, found["order"]
    assert len(found["returns"]) <= most_returns, found["returns"]
    counts = f"{len(listed)} files, {len(found['returns'])} returns"
    assert counts in text.split(f"<!-- trace {task} -->", 1)[1][:3000], f"architecture.md should say: {counts}"
    if task == "critic_feedback":
        predicted, human = found["extra"]
        assert found["value"] == pytest.approx(100 * stats.spearmanr(predicted, human).statistic, abs=1e-9)
    elif task == "critic_judgebench":
        pairs, orders = found["extra"]
        assert orders == ["forward", "reverse"] * pairs and pairs == 5
        assert found["value"] == pytest.approx(100 * 3 / 5)
    else:
        assert found["extra"] == [["med", "high"], [["failed"], ["passed"]]]
        assert found["value"] == 50.0  # one domain, one of its two items passes


@pytest.mark.xfail(strict=True, reason="issue 45's targets are not met yet (docs/architecture.md: the traces)")
@pytest.mark.parametrize("task", sorted(TARGETS))
def test_the_traces_meet_issue_45s_targets(task):
    found = _trace(task)
    files, returns = TARGETS[task]
    assert len(found["order"]) <= files and len(found["returns"]) <= returns, (len(found["order"]),
                                                                               found["returns"])


def test_the_orchestration_names_no_protocol():
    """A new protocol is its own package plus registry entries: the chance lines, the engine and the lm-eval hooks
    never compare against a protocol's name or one of its data dimensions (string constants in their code)."""
    import ast as _ast

    from critic_tasks import registry

    names = set(registry.PROTOCOLS) | {k.data_dimension for k in registry.TASK_KINDS.values()}
    for path in ("critic_tasks/chance.py", "critic_tasks/engine.py", "critic_tasks/adapters/lm_eval/task_functions.py"):
        tree = _ast.parse((REPO / path).read_text(encoding="utf-8"))
        compared = [c.value for node in _ast.walk(tree) if isinstance(node, _ast.Compare)
                    for c in _ast.walk(node) if isinstance(c, _ast.Constant) and c.value in names]
        assert not compared, f"{path} branches on protocol / dimension names: {compared}"


def test_the_orchestration_imports_no_protocol_package():
    """A protocol brings its own scorer (its batch step: the sandbox, a judge, revisers), listed in
    ``registry.SCORERS``: the chance lines, the engine and the lm-eval hooks import no module of a protocol package
    (only ``protocols/scorer.py``, the base every scorer extends), so adding one touches neither."""
    import ast as _ast

    packages = {p.name for p in (REPO / "critic_tasks" / "protocols").iterdir() if (p / "__init__.py").is_file()}
    assert {"criticbench", "revision", "metacritique"} <= packages
    for path in ("critic_tasks/chance.py", "critic_tasks/engine.py", "critic_tasks/adapters/lm_eval/task_functions.py"):
        tree = _ast.parse((REPO / path).read_text(encoding="utf-8"))
        imported = [n.module for n in _ast.walk(tree) if isinstance(n, _ast.ImportFrom) and n.module]
        imported += [a.name for n in _ast.walk(tree) if isinstance(n, _ast.Import) for a in n.names]
        imported += [f"{n.module}.{a.name}" for n in _ast.walk(tree) if isinstance(n, _ast.ImportFrom) and n.module
                     for a in n.names]
        reached = sorted({m for m in imported for pkg in packages
                          if m == f"critic_tasks.protocols.{pkg}" or m.startswith(f"critic_tasks.protocols.{pkg}.")})
        assert not reached, f"{path} imports protocol packages: {reached}"


def test_the_sandbox_reads_its_settings_once_where_an_executor_is_built():
    """Issue 45: the isolation read the data and cache folders' settings itself, on every program run. The executor
    reads them (and CRITIC_ALLOW_UNISOLATED) once, when it is built, and hands them down: no other module of the
    sandbox imports the settings."""
    readers = sorted(m for m, imps in IMPORTS.items() if m.startswith("critic_tasks.sandbox.")
                     and any(i.startswith("critic_tasks.core.settings") for i in imps))
    assert readers == ["critic_tasks.sandbox._executor"]


def test_the_sandbox_is_one_room():
    """Issue 45: the sandbox counts as one unit. Its public entry is ``critic_tasks/sandbox/__init__.py``; its
    private modules say so by name (``_executor``, ``_isolation``, ``_limits``, ``_workers``) and no module outside
    it imports them; the programs that run inside a sandbox live in ``inside/`` folders (the sandbox's own and a
    code correction's), read as text, never imported by the package outside the sandbox."""
    inside = sorted(m for m in MODULES if m.startswith("critic_tasks.sandbox.") and ".inside" not in m)
    assert inside == ["critic_tasks.sandbox._executor", "critic_tasks.sandbox._isolation",
                      "critic_tasks.sandbox._limits", "critic_tasks.sandbox._workers"]
    offenders = sorted(f"{m} -> {i}" for m, imps in IMPORTS.items() if not m.startswith("critic_tasks.sandbox")
                       for i in imps if i in MODULES and (i.startswith("critic_tasks.sandbox.") or ".inside" in i))
    assert offenders == []
    programs = {p.name for p in (PACKAGE / "protocols/criticbench/correction/inside").glob("*.py")}
    assert programs == {"__init__.py", "wire.py", "candidate_side.py", "tester_side.py", "prelude.py"}
    assert {p.name for p in (PACKAGE / "sandbox/inside").glob("*.py")} == {"__init__.py", "boot.py", "zygote.py",
                                                                         "tree.py"}


def test_no_module_defines_a_top_level_name_twice():
    """A second ``KEYS = ...`` in a module silently replaced the first (MetaCritique's AIU intervals became None when
    its metric declarations moved beside its value names): every top-level name is bound once per module."""
    import ast
    import collections

    twice = {}
    for path in sorted((REPO / "critic_tasks").rglob("*.py")):
        names = collections.Counter()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names[node.target.id] += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[node.name] += 1
        repeated = sorted(n for n, count in names.items() if count > 1 and n != "__all__")
        if repeated:
            twice[str(path.relative_to(REPO))] = repeated
    assert twice == {}
