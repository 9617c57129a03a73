"""What a reader opens from a task's YAML to its printed number, measured (``tests/test_architecture.py``).

    python tests/reader_trace.py <repository> <task> <all | a domain: its 2nd and 3rd documents>

Run in a fresh process: lm-eval builds the task (reads the YAML, executes utils.py, loads the documents), makes each
prompt, filters the replies, makes each document's record and aggregates. A file of ours counts where a function of
it runs (module bodies run by imports aside: importing is not reading), where the path reads a table of it (a
module-level name a function that ran loads: ``registry.TASK_KINDS``, ``registry.METRICS``; a class of ours named
there), and where its text is pasted into a program the sandbox runs (a module-level string holding a file of ours
the package read as text). The sandbox is one unit (issue 45's ruling: for scoring its contract is ``run_pairs`` ->
``PairResult.trusted.status``): every file under ``sandbox/`` and the programs that run inside it
(``protocols/criticbench/correction/inside/``) count as ``critic_tasks/sandbox/``.

Returns are counted as a reader meets them: opening a file already read and left, to read new code there. New code
is a top-level definition of the file not read before (a function; a class with its methods; a module-level table),
whoever calls it: a file of ours, or lm-eval, which calls the functions the YAML names (the reader goes back to the
YAML, then opens utils.py again), read at the opening or reading on in the file opened again (a definition read
before calling one that was not). A file opened again counts once in each of lm-eval's steps (building the task and
loading the documents, each prompt, gold text, filter, record, the aggregation), however often the step bounces
through it. Going back up the call stack reads nothing new and does not count; neither does a definition read
again. Prints the files in the order first met, the returns ([from, into, the definition]) and the
number with what a test recomputes it from.
"""

import ast
import dis
import inspect
import json
import os
import sys
import threading
import types

root, task_name, picked = sys.argv[1], sys.argv[2], sys.argv[3]
ours = os.path.join(root, "critic_tasks") + os.sep
utils_file = os.path.join(ours, "adapters", "lm_eval", "tasks", "utils.py")
SANDBOX = "critic_tasks/sandbox/"  # one unit: its files and the programs that run inside it
INSIDE = ("critic_tasks/sandbox/", "critic_tasks/protocols/criticbench/correction/inside/")
pasted, reading = {}, [False]


def audit(event, args):  # .py files of ours read as text (not imported): what a module pastes into a program
    if event != "open" or reading[0] or not isinstance(args[0], str):
        return
    path = os.path.abspath(args[0])
    if path.startswith(ours) and path.endswith(".py"):
        caller = sys._getframe(1).f_code.co_filename
        if "importlib" not in caller and not caller.startswith("<frozen"):
            reading[0] = True
            try:
                pasted[path] = open(path, encoding="utf-8").read()
            finally:
                reading[0] = False


sys.addaudithook(audit)
from lm_eval.tasks import TaskManager  # noqa: E402

YAML = f"critic_tasks/adapters/lm_eval/tasks/{task_name}.yaml"
order = [YAML]
analysed, owners, sources = set(), {}, {}
read = {}  # file -> the top-level definitions read there
returns = []  # [from, into, the new definitions]: a file already read and left, opened again for new code
at = [YAML]  # the file the reader has open
# lm-eval's step the reader follows (the YAML's next function), the files it counted a return into, and the files it
# opened again (each with the file it came from)
step = [0, set(), {}]


def rel(path):
    path = os.path.relpath(path, root)
    return SANDBOX if path.startswith(INSIDE) else path


def note(src, dst, units):
    """The reader, in ``src`` (None: lm-eval, which the YAML drives), opens ``dst`` to read ``units`` there."""
    if src is None:  # lm-eval's next step: the reader goes back to the YAML and opens the function it names
        src, step[0], step[1], step[2] = YAML, step[0] + 1, set(), {}
    new = sorted(set(units) - read.setdefault(dst, set()))
    if dst not in order:
        order.append(dst)
    elif dst != src and dst != at[0]:  # an opening of a file already read and left
        step[2][dst] = src
    # new code read in a file opened again in this step: at its opening, or reading on there (a function of the file
    # that a definition read before calls: the reader opened the file again to read it all the same)
    if new and dst in step[2] and dst not in step[1]:
        step[1].add(dst)
        returns.append([step[2][dst], dst, ", ".join(new)])
    read[dst].update(units)


def unit_of(code):
    """The top-level definition a code object belongs to: ``LikertRecord`` for ``LikertRecord.scored``."""
    name = getattr(code, "co_qualname", code.co_name)
    return name.split(".")[0]


def top_level_names(path):
    if path not in sources:
        reading[0] = True
        try:
            tree = ast.parse(open(path, encoding="utf-8").read())
        finally:
            reading[0] = False
        names = set()
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AnnAssign, ast.AugAssign)) else []
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        sources[path] = names
    return sources[path]


def owner_of(name, obj, module_globals):
    """The file of ours whose module-level code assigns ``name`` to ``obj`` (a table read)."""
    key = (name, id(obj))
    if key not in owners:
        owners[key] = None
        home = module_globals.get("__file__") or ""
        candidates = [home] + [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
        for path in candidates:
            if path.startswith(ours) and path.endswith(".py") and name in top_level_names(path):
                module = next((m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == path), None)
                if module is not None and getattr(module, name, None) is obj:
                    owners[key] = path
                    break
    return owners[key]


def is_code(obj):
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType))


def read_tables(frame, here):
    """The module-level names of ours this code loads: a table, a class, a text pasted into the sandbox."""
    code = frame.f_code
    if code in analysed:
        return
    analysed.add(code)
    instructions = list(dis.get_instructions(code))
    seen = {}  # file -> the definitions this code reads there, noted once per file: one opening each
    for i, ins in enumerate(instructions):
        if ins.opname not in ("LOAD_GLOBAL", "LOAD_NAME"):
            continue
        name = ins.argval
        if name not in frame.f_globals:
            continue
        obj, globals_of, found_name = frame.f_globals[name], frame.f_globals, name
        if isinstance(obj, types.ModuleType):  # module.NAME
            nxt = instructions[i + 1] if i + 1 < len(instructions) else None
            home = getattr(obj, "__file__", "") or ""
            if nxt is None or nxt.opname not in ("LOAD_ATTR", "LOAD_METHOD") or not home.startswith(ours):
                continue
            found_name, obj, globals_of = nxt.argval, getattr(obj, nxt.argval, None), vars(obj)
        if is_code(obj):
            continue
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue  # an error branch: the path the reader follows raises nothing
        if isinstance(obj, type):
            module = sys.modules.get(obj.__module__)
            path = getattr(module, "__file__", "") or ""
        else:
            path = owner_of(found_name, obj, globals_of) or ""
        if path.startswith(ours):
            seen.setdefault(rel(path), []).append(obj.__name__ if isinstance(obj, type) else found_name)
            if isinstance(obj, str):
                for file, text in pasted.items():
                    if len(text) > 80 and text in obj:
                        seen.setdefault(rel(file), []).append(os.path.basename(file))
    for path, units in seen.items():
        note(here, path, units)
    at[0] = here  # back in the code that read them


def importing(frame):
    while frame is not None:
        code = frame.f_code
        if code.co_name == "<module>" and code.co_filename.startswith(ours) and code.co_filename != utils_file:
            return True
        frame = frame.f_back
    return False


def caller_of(frame):
    frame = frame.f_back
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(ours):
            return rel(name)
        if os.sep + "lm_eval" + os.sep in name:
            return None  # called by the harness
        frame = frame.f_back
    return None


def profile(frame, event, arg):
    code = frame.f_code
    if event == "return" and code.co_filename == utils_file and code.co_name == "<module>":
        read_tables(frame, rel(utils_file))  # its names are bound once it has run
        return
    if event == "return" and code.co_filename.startswith(ours) and not importing(frame):
        at[0] = caller_of(frame) or YAML  # back up the call stack: nothing new read
        return
    if event != "call":
        return
    if not code.co_filename.startswith(ours):
        return
    if code.co_name == "<module>" and code.co_filename != utils_file or importing(frame.f_back):
        return
    here = rel(code.co_filename)
    generator = code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE)
    # a generator's frame is entered again at each resumption, from wherever its consumer is: read where it is
    note(here if generator else caller_of(frame), here, [unit_of(code)])
    at[0] = here
    if code.co_name != "<module>":
        read_tables(frame, here)


manager = TaskManager(include_path=os.path.join(ours, "adapters", "lm_eval", "tasks"), include_defaults=False)
threading.setprofile(profile)
sys.setprofile(profile)
task = manager.load([task_name])["tasks"][task_name]
docs = [d for d in task.eval_docs if picked == "all" or d["domain"] == picked]
docs = docs if picked == "all" else docs[1:3]
for doc in docs:
    task.doc_to_text(doc)
if task_name == "critic_feedback":
    # a real run also meets replies without the marker (counted unparsed, at the scale's midpoint): the last one here
    replies = [f"Decision: {i % 7 + 1}\nbecause" for i in range(len(docs) - 1)] + ["I would rather not rate this."]
    filtered = [[r] for r in replies]  # lm-eval's take_first
    key = "spearman"
elif task_name == "critic_judgebench":
    # the first three pairs judged right in both orders, the others wrong in both: the pair score is 3 of the pairs
    pairs = list(dict.fromkeys(d["pair_id"] for d in docs))
    def verdict(doc):
        shown = doc["label"] if doc["order"] == "forward" else {"A>B": "B>A", "B>A": "A>B"}[doc["label"]]
        wrong = {"A>B": "B>A", "B>A": "A>B"}[shown]
        return f"My final verdict is [[{shown if pairs.index(doc['pair_id']) < 3 else wrong}]]."
    filtered = [[verdict(d)] for d in docs]
    key = "accuracy"
else:
    replies = [[f"Revised:\n```python\n{d['generation']}\n```"] for d in docs]
    kept = task._filters[0].filters[0]().apply(replies, docs)
    filtered = [[k] for k in kept]
    key = "pass_rate"
rows = [task.process_results(doc, results)[key] for doc, results in zip(docs, filtered)]
value = task.aggregation()[key](rows)
sys.setprofile(None)
threading.setprofile(None)
if task_name == "critic_feedback":
    extra = [[i % 7 + 1 for i in range(len(docs) - 1)] + [4], [d["feedback_score"] for d in docs]]
elif task_name == "critic_judgebench":
    extra = [len(pairs), [d["order"] for d in docs]]
else:
    extra = [[d["quality"] for d in docs], [[c["status"] for c in row["checks"]] for row in rows]]
print(json.dumps({"order": order, "returns": returns, "value": value, "extra": extra}))
