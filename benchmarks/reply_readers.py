"""Every reader of a model's reply, today's against the readers as of commit 3f8f8b9 (before issue 44's rewrites),
on real text: the released replies in ../shared/data (CriticEval's DeepSeek-67B predictions, JudgeBench's judge
outputs) and the model-written texts of the bundled samples (responses, solutions, steps).

    python benchmarks/reply_readers.py [--per-source 2000] [--repeats 3] [--old 3f8f8b9]

The old readers are the package at that commit (``git archive``, into a temporary folder, never into the repo);
each side runs in a child process with its own package first on the path, reads the same texts, and reports the
best of ``--repeats`` total times per reader. Printed: one row per reader, old s, new s, new/old. Target (issue
44's done-when): no reader slower on these replies (ratio <= 1, within the +-30% of a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

# reader name -> (module, expression of a one-argument reader in that module's namespace)
READERS = {
    "criticbench likert (Decision)": ("critic_tasks.protocols.criticbench.scoring", "lambda t: parse_likert(t, 'Decision')"),
    "criticbench verdict": ("critic_tasks.protocols.criticbench.scoring", "parse_verdict"),
    "toolkit score": ("critic_tasks.protocols.criticbench.toolkit", "parse_score"),
    "toolkit verdict": ("critic_tasks.protocols.criticbench.toolkit", "parse_verdict"),
    "correction program": ("critic_tasks.protocols.criticbench.correction.check", "extract_code"),
    "final answer (correction)": ("critic_tasks.core.answers", "extract_final_answer"),
    "bracket rating (CritiqueLLM)": ("critic_tasks.core.parsing", "parse_bracket_rating"),
    "bracket verdict (CritiqueLLM)": ("critic_tasks.core.parsing", "parse_bracket_verdict"),
    "judge grade": ("critic_tasks.core.parsing", "parse_grade"),
    "AIU verdicts (MetaCritique)": ("critic_tasks.core.parsing", "lambda t: parse_numbered_verdicts(t, 5)"),
    "judgebench verdict": ("critic_tasks.protocols.judgebench.scoring", "parse_verdict"),
    "processbench index": ("critic_tasks.protocols.processbench.scoring", "read_index"),
    "realcritic answer": ("critic_tasks.protocols.realcritic.scoring", "lambda t: read_answer(t, False)"),
    "realcritic choice": ("critic_tasks.protocols.realcritic.scoring", "lambda t: read_answer(t, True)"),
}


def _strings(value, out: list[str]) -> None:
    if isinstance(value, str):
        if len(value) >= 20:
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _texts_of(paths, limit: int) -> list[str]:
    out: list[str] = []
    for path in sorted(paths):
        raw = path.read_text(encoding="utf-8", errors="replace")
        try:
            records = [json.loads(raw)]
        except json.JSONDecodeError:
            records = [json.loads(line) for line in raw.splitlines() if line.strip()]
        for record in records:
            _strings(record, out)
        if len(out) >= limit:
            break
    return out[:limit]


def corpus(per_source: int) -> dict[str, list[str]]:
    sources = {
        "CriticEval predictions": (SHARED / "criticeval" / "example-predictions").rglob("*.json*"),
        "JudgeBench outputs": (SHARED / "judgebench" / "outputs").glob("*.jsonl"),
        "bundled samples": [p for p in (ROOT / "critic_tasks" / "protocols").glob("*/sample_data/**/*")
                            if p.suffix in (".json", ".jsonl")],
    }
    return {name: _texts_of(paths, per_source) for name, paths in sources.items()}


def time_readers(texts_file: str, repeats: int) -> dict[str, float | None]:
    """In the child: each reader's best total time over the texts (None: no such reader in this package)."""
    import importlib
    import warnings

    warnings.simplefilter("ignore")
    texts = json.loads(Path(texts_file).read_text())
    spent: dict[str, float | None] = {}
    for name, (module, expression) in READERS.items():
        try:
            read = eval(expression, vars(importlib.import_module(module)))  # noqa: S307 (our own table above)
        except (ImportError, NameError, AttributeError):
            spent[name] = None
            continue
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for text in texts:
                read(text)
            best = min(best, time.perf_counter() - started)
        spent[name] = best
    return spent


def run_side(package_root: Path, texts_file: str, repeats: int) -> dict[str, float | None]:
    env = dict(os.environ, PYTHONPATH=str(package_root), HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, __file__, "--child", texts_file, "--repeats", str(repeats)], env=env,
                          cwd=package_root, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-source", type=int, default=2000, help="texts read from each source (default 2000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old", default="3f8f8b9", help="the commit whose readers are the baseline")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(time_readers(args.child, args.repeats)))
        return
    texts = corpus(args.per_source)
    flat = [t for ts in texts.values() for t in ts]
    print("texts: " + ", ".join(f"{name} {len(ts)} ({sum(map(len, ts)) / 1e6:.1f} MB)" for name, ts in texts.items()))
    with tempfile.TemporaryDirectory() as scratch:
        texts_file = str(Path(scratch) / "texts.json")
        Path(texts_file).write_text(json.dumps(flat))
        old_root = Path(scratch) / "old"
        old_root.mkdir()
        archive = subprocess.run(["git", "archive", args.old, "critic_tasks"], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        archive_path = Path(scratch) / "old.tar"
        archive_path.write_bytes(archive)
        with tarfile.open(archive_path) as tar:
            tar.extractall(old_root)
        old = run_side(old_root, texts_file, args.repeats)
        new = run_side(ROOT, texts_file, args.repeats)
    print(f"{'reader':32s} {'old s':>8s} {'new s':>8s} {'new/old':>8s}")
    for name in READERS:
        o, n = old.get(name), new.get(name)
        ratio = f"{n / o:8.2f}" if o and n is not None else "       -"
        print(f"{name:32s} {o if o is not None else float('nan'):8.3f} {n:8.3f} {ratio}")


if __name__ == "__main__":
    main()
