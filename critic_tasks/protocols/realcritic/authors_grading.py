"""The authors' reading and grading of a RealCritic reply (``grading: authors``), written here and proven equal to
theirs on replies of every shape (tests/test_realcritic_grading.py imports their parser.py and grader.py).

What their code does with a reply (``math_eval.py`` -> ``parser.run_execute`` / ``extract_answer`` ->
``evaluate.py`` -> ``grader.math_equal``), which these functions follow step by step:

* the reply, stripped; an empty one (or the word ``error``) has no answer;
* ``extract_answer`` per data source: mmlu_stem reads an option letter from the whole reply
  (``choice_answer_clean``: the letter after the last "answer is" / "choice is", else the last A-E standing alone);
  the others read minerva's "final answer is $...$. I hope", else the last ``boxed`` (its balanced braces, or the
  text up to a ``$``), else the text after "the answer is" / "final answer is" / "best answer is" / "correct answer
  is" / "答案是", else the last number (commas dropped); arc-challenge and gpqa then keep the last A-E standing
  alone; then ``strip_string`` (units, ``\\text{}``, ``\\left``, ``dfrac``, percentages, trailing ``.0``, ...);
* a multiple-choice item whose answer is not a letter is read again with ``choice_answer_clean`` (``math_eval``);
* the gold: ``strip_string(gt)`` (math: the answer read from the reference solution ``gt_cot``; minerva_math: ``gt``
  as it is);
* ``math_equal``: equal texts (case aside); a choice letter; two numbers within a relative 1e-4 of the gold, of the
  gold / 100 or of the gold * 100; bracketed lists element by element; matrices; equations; else sympy
  (``symbolic_equal``: parse_latex, parse_expr, latex2sympy, then equality, simplification, numeric value).

Where ours must differ, and why (each tested):

* **Linear time.** Their regexes ``\\text{.*?}$``, ``\\text\\{(.*?)\\}``, ``\\mbox{.*?}``, ``\\begin\\{array\\}\\{.*?\\}``
  and ``(\\d+)\\.0*([^\\d])`` take quadratic time on some strings; ours give the same results in one pass.
* **Bounded.** An answer longer than ``MAX_ANSWER_CHARS`` after extraction is graded wrong unread (no released
  answer is near that length; their code spends minutes on such a string); the sympy step runs in a child process
  killed after ``SYMBOLIC_SECONDS`` (their evaluate.py's own timeout, which counts as wrong too), only for answers of
  at most ``SYMBOLIC_MAX_CHARS``.
* **No code from the model is run.** Their ``parse_expr`` evaluates its input as Python (a box holding
  ``__import__('os').system(...)`` runs it); ours skips that parser for a text with quotes, dunders, attribute access,
  ``lambda`` or a builtin function other than plain arithmetic ones (a text that would make it raise in theirs too,
  in every released answer); so does sympy's ``N``, which parses a text it is given the same way.
* **Their environment.** sympy's ``parse_latex`` needs antlr4 4.11, which math-verify's 4.13 excludes, so here it
  raises ImportError, which their code catches as ours does; ``latex2sympy`` is math-verify's fork
  (``latex2sympy2_extended``), not the original ``latex2sympy2``. The tests run their code in this same
  environment (shims in tests/realcritic_authors.py), so both read alike; the published ``previous_score`` was made
  in theirs (sympy 1.12, antlr4 4.11), which decides some symbolic comparisons otherwise (docs/protocols/realcritic.md).

The unit list ``strip_string`` removes is the authors' data: read at run time from their parser.py at a pinned commit
(``protocols.authors``), never copied here.
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from functools import lru_cache

from critic_tasks.core.answers import _MathVerifyWorker, calculus_done, far
from critic_tasks.core.errors import DataError
from critic_tasks.protocols.authors import AuthorsFile
from critic_tasks.protocols.realcritic import data

# parser.py at the one commit the code index stores (22,881 characters); the shared checkout's copy prefixes a
# docstring to the same file (accepted too: its unit list is the same, which the tests check)
PARSER = AuthorsFile(data.REPO, "b47dab3fede6fdbaea34f526f01b0be4ca54690b", "parser.py",
                     "1ef1e28a0af90934166794bf37a428553db2c23335fdd8f6628ba2fe4ce6b262", data.DATA_DIR_ENV,
                     also_sha256=("50ee356918e5ed74f5e7f3548efe91e73fe8cd7048de36514088c6a857eb804a",),
                     what="the authors' answer reader (its unit list)", instead="use the option grading: strict")

MAX_ANSWER_CHARS = 10_000
SYMBOLIC_MAX_CHARS = 1_000
SYMBOLIC_SECONDS = 3.0  # evaluate.py's timeout per item
LETTERS = ("A", "B", "C", "D", "E")
NO_UNIT_TASKS = ("carp_en", "minerva_math")  # parser.STRIP_EXCEPTIONS
LETTER_TASKS = ("sat_math", "aqua", "arc-challenge", "gpqa")  # and any name holding "mmlu"
WHOLE_REPLY_CHOICE_TASKS = ("mmlu_stem", "sat_math", "aqua", "gaokao2023")


# ----------------------------------------------------------------------------- the unit list (their data)

def units_from_source(source: str, where: str = PARSER.path) -> tuple[str, ...]:
    """``unit_texts`` of their parser.py, read without running it: the list literal, then each entry + "s"."""
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "unit_texts"):
            try:
                units = ast.literal_eval(node.value)
            except ValueError:
                break
            if isinstance(units, list) and all(isinstance(u, str) for u in units):
                return tuple(units) + tuple(u + "s" for u in units)  # unit_texts.extend([t + "s" ...])
    raise DataError(f"{where}: no unit_texts list of strings (another version of the authors' file?)")


_SOURCE: dict[str, str | None] = {"root": None}  # where the last run's documents were loaded from


def use_source(data_dir=None) -> None:
    """Read the unit list from the checkout the run's data setting names (the loader calls this), or else from the
    cache, a mirror or GitHub; fails here, before any generation, when none has it."""
    _SOURCE["root"] = data.checkout_root(data_dir, PARSER.path)
    units()


def units(data_dir: str | None = None) -> tuple[str, ...]:
    return _units(data_dir if data_dir is not None else _SOURCE["root"])


@lru_cache(maxsize=None)
def _units(root: str | None) -> tuple[str, ...]:
    return units_from_source(PARSER.text(root), PARSER.path)


@lru_cache(maxsize=None)
def _unit_pattern(unit: str) -> re.Pattern:
    return re.compile(r"(^|\W)" + unit + r"($|\W)")  # the unit is a regex there ("q ." matches "q x")


# ----------------------------------------------------------------------------- strip_string, in linear time

def _lazy_group_sub(text: str, opening: str, replace_with) -> str:
    """``re.sub(opening + "(.*?)}", ...)`` (no newline in ``text``): each ``opening`` up to the next "}" replaced by
    ``replace_with(content)``, left to right, without the regex's rescan from every opening that no "}" follows."""
    out, pos = [], 0
    while True:
        start = text.find(opening, pos)
        if start == -1:
            break
        close = text.find("}", start + len(opening))
        if close == -1:
            break  # no "}" after this opening: none after any later one either
        out += [text[pos:start], replace_with(text[start + len(opening):close])]
        pos = close + 1
    return "".join(out) + text[pos:]


def _drop_trailing_text(text: str) -> str:
    """``re.sub(r"\\\\text{.*?}$", "", text)``: from the first ``\\text{`` to the end, when the text ends with "}"."""
    start = text.find("\\text{")
    if start != -1 and text.endswith("}") and len(text) - 1 >= start + len("\\text{"):
        return text[:start]
    return text


_POINT_ZEROS_BEFORE = re.compile(r"(?<!\d)(\d++)\.0*+(?=\D)")  # (\d+)\.0*([^\d]) -> \1\2, without backtracking
_POINT_ZEROS_AT_END = re.compile(r"(?<!\d)(\d++)\.0*+$")  # (\d+)\.0*$ -> \1
_SQRT_WORD = re.compile(r"\\sqrt(\w+)")


def _word_number(text: str) -> str:
    from word2number import w2n  # their convert_word_number's library

    try:
        return str(w2n.word_to_num(text))
    except Exception:
        return text


def _fix_fracs(text: str) -> str:
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part[:1] == "{":
            out += part
        elif len(part) < 2:
            return text
        elif part[1] != "{":
            out += "{" + part[0] + "}{" + part[1] + "}" + part[2:]
        else:
            out += "{" + part[0] + "}" + part[1] + part[2:]
    return out


def _fix_a_slash_b(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2:
        return text
    a, b = parts
    try:
        a = a if "sqrt" in a else int(a)
        b = b if "sqrt" in b else int(b)
    except ValueError:
        return text
    return "\\frac{" + str(a) + "}{" + str(b) + "}" if text == f"{a}/{b}" else text


def strip_string(text, skip_unit: bool = False, unit_list: tuple[str, ...] = ()) -> str:
    """Their ``strip_string``, step by step (``unit_list``: their unit_texts, ``units()``)."""
    s = str(text).strip().replace("\n", "").rstrip(".").replace("\\!", "")
    s = _lazy_group_sub(s, "\\begin{array}{", lambda _: "\\begin{pmatrix}")
    s = s.replace("\\end{array}", "\\end{pmatrix}").replace("bmatrix", "pmatrix")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\neq", "\\ne").replace("\\leq", "\\le").replace("\\geq", "\\ge")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\{", "{").replace("\\}", "}")
    dropped = _drop_trailing_text(s).strip()
    if dropped != "" and dropped != s:
        s = dropped
    if not skip_unit:
        for _ in range(2):
            for unit in unit_list:
                removed = _unit_pattern(unit).sub(r"\1\2", s)
                if removed != "":
                    s = removed
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\(", "").replace("\\)", "")
    s = _word_number(s)
    s = _lazy_group_sub(s, "\\text{", lambda inner: inner)
    for key in ("x=", "y=", "z=", "x\\in", "y\\in", "z\\in", "x\\to", "y\\to", "z\\to"):
        s = s.replace(key, "")
    s = s.replace("\\emptyset", "{}").replace("(-\\infty,\\infty)", "\\mathbb{R}")
    s = s.replace("\\%", "").replace("%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    # (their check for a bracketed alphanumeric text can never hold: a bracket is not alphanumeric)
    s = s.replace("infinity", "\\infty")
    if "\\infty" not in s:
        s = s.replace("inf", "\\infty")
    s = s.replace("+\\inity", "\\infty").replace("and", "").replace("\\mathbf", "")
    s = _lazy_group_sub(s, "\\mbox{", lambda _: "")
    if "j" in s and "i" not in s:
        s = s.replace("j", "i")
    s = _POINT_ZEROS_BEFORE.sub(r"\1", s)
    s = _POINT_ZEROS_AT_END.sub(r"\1", s)
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        s = sides[1]
    s = _SQRT_WORD.sub(r"\\sqrt{\1}", s).replace(" ", "")
    return _fix_a_slash_b(_fix_fracs(s))


# ----------------------------------------------------------------------------- reading the answer

_LONE_LETTER = re.compile(r"\b(A|B|C|D|E)\b")
_TRIGGERS = ("choice is", "answer is")
_LAST_NUMBER = re.compile(r"-?\d*\.?\d+")


def choice_answer_clean(text: str) -> str:
    """parser.py's ``choice_answer_clean``: the letter after the last "answer is" / "choice is" (the first A-E
    standing alone there), else the last A-E standing alone, else the text itself, trimmed."""
    text = text.strip("\n")
    if any(text.count(t) > 1 for t in _TRIGGERS):  # several: a few-shot prompt; its first chunk is the answer
        text = text.split("\n\n")[0]
    pieces = re.split("|".join(_TRIGGERS), text)
    after_trigger = len(pieces) > 1
    text = pieces[-1] if after_trigger else text
    text = text.strip("\n").rstrip(".").rstrip("/").strip(" ").lstrip(":")
    letters = _LONE_LETTER.findall(text.upper())
    chosen = (letters[0] if after_trigger else letters[-1]) if letters else text.strip().strip(".")
    return chosen.rstrip(".").rstrip("/")


def _box_content(rest: str) -> str:
    """What follows the last "boxed": its balanced braces' content (all of the rest when they never close), or the
    text up to a "$"."""
    if rest[0] != "{":
        return rest.split("$")[0].strip()
    depth = 1
    for match in re.finditer(r"[{}]", rest[1:]):
        depth += 1 if match.group() == "{" else -1
        if depth == 0:
            return rest[1:match.start() + 1]
    return rest[1:]


def extract_answer(text: str, task: str, unit_list: tuple[str, ...] = ()) -> str:
    """parser.py's ``extract_answer`` for a data source (see the module doc)."""
    text = text.replace("\u043a\u0438", "")
    if task in WHOLE_REPLY_CHOICE_TASKS:
        return choice_answer_clean(text)
    if "final answer is $" in text and "$. I hope" in text:
        pred = text.split("final answer is $", 1)[1].split("$. I hope", 1)[0].strip()
    elif "boxed" in text:
        rest = text[text.rfind("boxed") + len("boxed"):]
        if not rest:
            return ""
        pred = _box_content(rest)
    else:
        for phrase in ("he answer is", "final answer is", "best answer is", "correct answer is"):
            if phrase in text:
                pred = text[text.rfind(phrase) + len(phrase):].strip()
                break
        else:
            if "答案是" in text:
                pred = text.split("答案是")[1].strip().split("\n\n")[0].strip()
            else:
                numbers = _LAST_NUMBER.findall(text.replace(",", ""))
                pred = numbers[-1] if numbers else ""
    if task in LETTER_TASKS or "mmlu" in task:
        letters = _LONE_LETTER.findall(pred.upper())
        pred = letters[-1] if letters else pred.strip().strip(".")
    pred = re.sub(r"\n\s*", "", pred)
    if pred[:1] == ":":
        pred = pred[1:]
    if pred[-1:] == ".":
        pred = pred[:-1]
    if pred[-1:] == "/":
        pred = pred[:-1]
    return _strip_bounded(pred, task, unit_list)


def _strip_bounded(pred: str, task: str, unit_list: tuple[str, ...]) -> str:
    if len(pred) > MAX_ANSWER_CHARS:
        return pred  # graded wrong unread (see ``equal``); strip_string would only spend time on it
    return strip_string(pred, skip_unit=task in NO_UNIT_TASKS, unit_list=unit_list)


def all_letters(text: str) -> bool:  # math_eval.is_multi_choice ("" counts)
    return all(c in LETTERS for c in text)


def read_answer(reply, task: str, gold: str, data_dir=None) -> str | None:
    """The answer their pipeline reads from a reply (None: none, as ``run_execute`` gives for an empty reply)."""
    text = reply.strip() if isinstance(reply, str) else ""
    unit_list = () if task in NO_UNIT_TASKS else units(data_dir)
    # run_execute strips the extracted answer once more
    pred = None if not text or text == "error" else _strip_bounded(extract_answer(text, task, unit_list), task,
                                                                    unit_list)
    if gold in LETTERS and pred not in LETTERS:  # math_eval.main: a choice item's answer read again as a choice
        pred = choice_answer_clean(text)
    elif all_letters(gold) and not all_letters(pred or ""):
        pred = "".join(c for c in (pred or "") if c in LETTERS)
    return pred


def gold_answer(doc: dict, data_dir=None) -> str:
    """parse_ground_truth with ``gt_cot``: math reads the reference solution, minerva_math keeps ``gt``, the others
    strip it."""
    task = doc["task"]
    if task == "math":
        return extract_answer(doc.get("gold_solution", ""), task, units(data_dir))
    if task in NO_UNIT_TASKS:
        return doc["gold"]
    return strip_string(doc["gold"], unit_list=units(data_dir))


# ----------------------------------------------------------------------------- math_equal

def _digits(text: str) -> float | None:  # grader.parse_digits
    text = text.replace(",", "")
    try:
        return float(text)
    except ValueError:
        if text.endswith("%"):
            text = text[:-1].removesuffix("\\")
            try:
                return float(text) / 100
            except ValueError:
                pass
    return None


def _grader_choice(text: str) -> str:  # grader.py's own, shorter choice_answer_clean
    text = text.strip("\n").rstrip(".").rstrip("/").strip(" ").lstrip(":")
    letters = _LONE_LETTER.findall(text.upper())
    return (letters[-1] if letters else text.strip().strip(".")).rstrip(".").rstrip("/")


def _close(a: float, b: float) -> bool:
    try:
        return math.isclose(b, a, rel_tol=1e-4)
    except (TypeError, ValueError, OverflowError):
        return False


def _string_rules(pred: str, ref: str) -> bool | None:
    """math_equal's first rules: True / False where they decide, None where the comparison goes on."""
    if pred.strip().lower() == ref.strip().lower():
        return True
    if ref in LETTERS and _grader_choice(pred) == ref:
        return True
    a, b = _digits(pred), _digits(ref)
    if a is not None and b is not None:
        return any(_close(a, target) for target in (b / 100, b, b * 100))
    if not pred:
        return False
    return None


def equal(pred: str | None, ref: str | None) -> bool:
    """grader.math_equal(pred, ref) (see the module doc for the bounds)."""
    found = decided(pred, ref)
    return found if found is not None else _WORKER.ask("equal", pred, ref)


def decided(pred: str | None, ref: str | None) -> bool | None:
    """``equal``'s verdict where it needs no symbolic step (a missing side, the length bounds, math_equal's string
    and number rules), None where it goes on to the bounded child process. Cheap: a chance line tries many answers
    this way first."""
    if pred is None or ref is None:
        return False
    if len(pred) > MAX_ANSWER_CHARS or len(ref) > MAX_ANSWER_CHARS:
        return False
    found = _string_rules(pred, ref)
    if found is not None:
        return found
    if len(pred) > SYMBOLIC_MAX_CHARS or len(ref) > SYMBOLIC_MAX_CHARS or "\x00" in pred + ref:
        return False
    return None


# --- the rest of math_equal, run in the bounded child process (``_WORKER``)

_BRACKETED = re.compile(r"(\(|\[).+(\)|\])")


def _to_pmatrix(text: str) -> str:  # grader.str_to_pmatrix
    rows = re.findall(r"\{.*,.*\}", text.strip())
    return ", ".join(r"\begin{pmatrix}" + m.strip("{}").replace(",", "\\") + r"\end{pmatrix}" for m in rows)


def _is_matrix(text: str) -> bool:
    return (text.startswith(("\\begin{pmatrix}", "\\begin{bmatrix}"))
            and text.endswith(("\\end{pmatrix}", "\\end{bmatrix}")))


def _matrix_rows(text: str) -> list[str]:
    inner = text[len("\\begin{pmatrix}"):-len("\\end{pmatrix}")]
    return [line.strip() for line in inner.split("\\\\") if line.strip()]


def _same_without_brackets(pred: str, ref: str) -> bool:
    """math_equal's rule on the texts without their brackets: an outer [..] / (..) pair dropped from both (unless
    the other side opens with the other kind), then every brace and parenthesis, compared case aside."""
    pred_bare, ref_bare = pred, ref
    if ((pred.startswith("[") and pred.endswith("]") and not ref.startswith("("))
            or (pred.startswith("(") and pred.endswith(")") and not ref.startswith("["))):
        pred_bare, ref_bare = pred_bare.strip("[]()"), ref_bare.strip("[]()")
    for bracket in "{}()":
        pred_bare, ref_bare = pred_bare.replace(bracket, ""), ref_bare.replace(bracket, "")
    return pred_bare.lower() == ref_bare.lower()


def full_equal(pred: str, ref: str, symbolic=None) -> bool:
    """grader.math_equal (no timeout argument: evaluate.py's call), in full; ``symbolic``: its last step
    (``symbolic_equal``; ``could_equal`` runs the same rules with a necessary condition of it)."""
    symbolic = symbolic or symbolic_equal
    decided = _string_rules(pred, ref)
    if decided is not None:
        return decided
    ref, pred = str(ref).strip(), str(pred).strip()
    if "pmatrix" in pred and "pmatrix" not in ref:
        ref = _to_pmatrix(ref)
    if _same_without_brackets(pred, ref):
        return True
    if _BRACKETED.match(pred) and _BRACKETED.match(ref):
        pred_parts, ref_parts = pred[1:-1].split(","), ref[1:-1].split(",")
        if len(pred_parts) == len(ref_parts) and all(full_equal(p, r, symbolic)
                                                     for p, r in zip(pred_parts, ref_parts)):
            return True
    if _is_matrix(pred) and _is_matrix(ref):
        pred_rows, ref_rows = _matrix_rows(pred), _matrix_rows(ref)
        if len(pred_rows) == len(ref_rows) and all(
                len(p.split("&")) == len(r.split("&"))
                and all(full_equal(a, b, symbolic) for a, b in zip(p.split("&"), r.split("&")))
                for p, r in zip(pred_rows, ref_rows)):
            return True
    if pred.count("=") == 1 and ref.count("=") == 1:
        p_left, p_right = pred.split("=")
        r_left, r_right = ref.split("=")
        p_diff, r_diff = f"{p_left.strip()} - ({p_right.strip()})", f"{r_left.strip()} - ({r_right.strip()})"
        if symbolic(p_diff, r_diff) or symbolic(f"-({p_diff})", r_diff):
            return True
    elif pred.count("=") == 1 and len(pred.split("=")[0].strip()) <= 2 and "=" not in ref:
        if full_equal(pred.split("=")[1], ref, symbolic):
            return True
    elif ref.count("=") == 1 and len(ref.split("=")[0].strip()) <= 2 and "=" not in pred:
        if full_equal(pred, ref.split("=")[1], symbolic):
            return True
    return symbolic(pred, ref)


# builtin functions parse_expr's namespace holds that only compute (their other builtins, open / eval / exec /
# __import__ / getattr ..., would run whatever the model wrote)
_ARITHMETIC_BUILTINS = frozenset({"abs", "min", "max", "round", "pow", "divmod", "sum", "len", "sorted", "hash",
                                  "bin", "oct", "hex", "chr", "ord", "all", "any"})
_DANGEROUS_NAMES = frozenset(name for name, obj in vars(builtins).items()
                             if callable(obj) and name not in _ARITHMETIC_BUILTINS)


def _safe_for_parse_expr(text: str) -> bool:
    """No quote, dunder, attribute access, lambda or non-arithmetic builtin: nothing parse_expr's eval would run
    beyond sympy arithmetic."""
    if any(c in text for c in "'\"`@;") or "__" in text or re.search(r"(?<![0-9])\.\s*[A-Za-z_]", text):
        return False
    names = set(re.findall(r"[A-Za-z_]\w*", text))
    return "lambda" not in names and not names & _DANGEROUS_NAMES


@lru_cache(maxsize=4096)
def _parse(text: str):
    """The first of their three parsers that reads ``text`` (or the text itself). A pure function of the text, read
    once per text in the child (sympy objects are immutable: the same comparison, half its time saved)."""
    from sympy.parsing.latex import parse_latex
    from sympy.parsing.sympy_parser import parse_expr

    def parse_expr_safe(s):
        if not _safe_for_parse_expr(s):
            raise ValueError("not parsed: it could run code")
        return parse_expr(s)

    from latex2sympy2_extended import latex2sympy

    for parser in (parse_latex, parse_expr_safe, latex2sympy):
        try:
            return parser(text.replace("\\\\", "\\"))
        except Exception:
            try:
                return parser(text)
            except Exception:
                pass
    return text


def symbolic_equal(a: str, b: str) -> bool:
    """grader.symbolic_equal, in the order it tries."""
    from sympy import N, simplify

    a, b = _parse(a), _parse(b)
    try:
        if str(a) == str(b) or a == b:
            return True
    except Exception:
        pass
    try:
        if a.equals(b) or simplify(a - b) == 0:
            return True
    except Exception:
        pass
    try:
        if (abs(a.lhs - a.rhs)).equals(abs(b.lhs - b.rhs)):
            return True
    except Exception:
        pass
    try:  # N sympifies a text it is given, with parse_expr's eval: the same guard as the parser's
        if any(isinstance(x, str) and not _safe_for_parse_expr(x) for x in (a, b)):
            raise ValueError("not evaluated: it could run code")
        if _close(float(N(a)), float(N(b))):
            return True
    except Exception:
        pass
    try:
        if a.shape == b.shape:
            if a.applyfunc(lambda x: round(x, 3)).equals(b.applyfunc(lambda x: round(x, 3))):
                return True
    except Exception:
        pass
    return False


def _request(op: str, pred: str, ref: str = ""):
    if op == "facts":  # could_equal's: what symbolic_equal's rules see of one text (ref: on the gold's side)
        try:
            return symbolic_facts(pred, bool(ref))
        except Exception:
            return None  # unknown: the pair stays open
    try:
        return bool(full_equal(pred, ref))
    except Exception:  # evaluate.py: a grading that raises ends their run; here it is a wrong answer
        return False


def _serve():
    """The child's loop (``core.answers._MathVerifyWorker``): a JSON request per line in, true/false per line out."""
    import json
    import sys
    import warnings

    warnings.filterwarnings("ignore")
    import latex2sympy2_extended  # noqa: F401  (imported before "ready")
    import sympy  # noqa: F401

    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        print(json.dumps(_request(*json.loads(line))), flush=True)


_WORKER = _MathVerifyWorker("critic_tasks.protocols.realcritic.authors_grading:_serve", SYMBOLIC_SECONDS, _request)


# ----------------------------------------------------------------------------- a necessary condition (chance lines)
#
# ``symbolic_equal(a, b)`` (a: the answer's side, b: the gold's; ``full_equal`` never swaps them) holds only by one
# of its rules; what each rule can see of one side is computed once per text in the child (``symbolic_facts``), and
# ``could_symbolic_equal`` says False only where no rule can hold. With ``a`` and ``b`` their readings (``_parse``):
#   str(a) == str(b)        decided exactly: both strings are kept;
#   N within 1e-4           decided exactly: each side's float(N(x)) is kept (None where it raises or is refused);
#   a == b                  the same expression (then the same value at any point), or equal texts (the first rule);
#                           a text never equals a sympy object, an expression never a relation;
#   a.equals(b), simplify(a - b) == 0
#                           an expression: equal as functions to b, or to sympify(b) when b is a text (Expr.equals
#                           sympifies its argument; simplify(a - text) raises); a relation: b a relation with the
#                           same sides (maybe swapped); a text has no ``equals``, and a relation minus anything raises;
#   |a.lhs - a.rhs| equals |b.lhs - b.rhs|   two relations only;
#   .shape                  neither an expression, a relation nor a text has one.
# Equal as functions (sympy's symbolic steps accept nothing else: ``core.answers``'s axiom) means equal values at
# one point: each symbol set to a real from its name, each undefined function (u(t), I(0)) to a fixed function of
# its arguments from its name (an identity sympy proves for an opaque function holds for every function),
# derivatives then evaluated; relations compare |lhs - rhs| there. Anything else (sets, tuples, matrices, booleans,
# symbols with assumptions, values that are not finite numbers) is unknown: the pair stays open.


def _value_at_point(expr) -> complex | None:
    """``expr``'s value with each free symbol and undefined function replaced as above (30 digits), or None."""
    from sympy import Expr, MatrixExpr, Symbol, UnevaluatedExpr
    from sympy.core.function import AppliedUndef

    from critic_tasks.core.answers import _point_symbols, point_seed

    if not isinstance(expr, Expr) or isinstance(expr, MatrixExpr) or expr.has(UnevaluatedExpr) or expr.atoms(
            MatrixExpr):
        return None
    allowed = _point_symbols()

    def seed(name: str, k: int = 0):
        return point_seed(f"{name}#{k}")

    applied = expr.atoms(AppliedUndef)
    if any(f.assumptions0 not in allowed and f.assumptions0 != {} for f in applied):  # {}: Function("u")'s own
        return None
    expr = calculus_done(expr)
    if expr is None:
        return None
    symbols = expr.free_symbols
    if any(not isinstance(s, Symbol) or s.assumptions0 not in allowed for s in symbols):
        return None
    value = (expr.xreplace({s: seed(s.name) for s in symbols}) if symbols else expr).evalf(30)
    re_part, im_part = value.as_real_imag()
    if not all(part.is_Float or part.is_zero is True for part in (re_part, im_part)):
        return None
    found = complex(float(re_part), float(im_part))
    return None if found != found or abs(found) == float("inf") else found


def _numeric(x) -> float | None:
    """symbolic_equal's last numeric rule's view of one side: float(N(x)), with its guard (None: it raises)."""
    from sympy import N

    try:
        if isinstance(x, str) and not _safe_for_parse_expr(x):
            return None
        found = float(N(x))
        return None if found != found else found
    except Exception:
        return None


def _point(expr, minus=None) -> list | None:
    try:
        found = _value_at_point(expr if minus is None else expr - minus)
    except Exception:
        return None
    return None if found is None else [found.real, found.imag]


def _kind_and_value(obj) -> tuple[str, list | None]:
    """("expr", value), ("relation", value of lhs - rhs), ("text", None) or ("other", None); a value is
    [re, im] or None (unknown)."""
    from sympy import Expr
    from sympy.core.relational import Relational

    if isinstance(obj, str):
        return "text", None
    if isinstance(obj, Relational):
        sides = isinstance(obj.lhs, Expr) and isinstance(obj.rhs, Expr)
        return "relation", _point(obj.lhs, obj.rhs) if sides else None
    if isinstance(obj, Expr) and not hasattr(obj, "shape"):
        return "expr", _point(obj)
    return "other", None


def _tree(obj, depth: int = 0):
    """What ``==`` compares of a reading: ["expr", value] for a scalar expression (sympy's == on two is the same
    expression, or numbers of equal value), else [class, children] (a Python tuple as sympy's Tuple, which it
    equals), ["text", string], or None (unknown)."""
    from sympy import Basic, Expr, sympify

    if depth > 40:
        return None
    if isinstance(obj, str):
        return ["text", obj]
    if isinstance(obj, (bool, int, float)):
        obj = sympify(obj)
    if isinstance(obj, (tuple, list)):
        return ["Tuple" if isinstance(obj, tuple) else "list", [_tree(x, depth + 1) for x in obj]]
    if isinstance(obj, Expr) and not hasattr(obj, "shape"):
        return ["expr", _point(obj)]
    if isinstance(obj, Basic) and not hasattr(obj, "shape"):
        return [type(obj).__name__, [_tree(x, depth + 1) for x in obj.args]]
    if hasattr(obj, "shape"):
        return ["shaped", None]  # == holds only with another matrix (sympy compares types first)
    return None


def _trees_may_equal(a, b) -> bool:
    """False only where readings with these ``_tree``s cannot be ``==``: another class or length, scalar
    expressions far apart; a FiniteSet's elements matched in any order."""
    if a is None or b is None:
        return True
    if a[0] != b[0]:
        return False
    if a[0] == "expr":
        return _near(a[1], b[1])
    if a[0] == "text":
        return a[1] == b[1]
    if a[0] == "shaped":
        return True
    if len(a[1]) != len(b[1]):
        return False
    if a[0] == "FiniteSet":
        return (all(any(_trees_may_equal(x, y) for y in b[1]) for x in a[1])
                and all(any(_trees_may_equal(x, y) for x in a[1]) for y in b[1]))
    return all(_trees_may_equal(x, y) for x, y in zip(a[1], b[1]))


def _other_facts(obj) -> dict:
    """For a reading that is neither a text, a scalar expression nor a relation (a set, an interval, a tuple, a
    matrix, a logical formula): what ``symbolic_equal`` can do with it. ``equals``: "none" (no such method: the
    try ends there), "raises" (a logical formula holding a relation: sympy refuses it) or "unknown"; whether it has
    ``lhs``, ``shape`` or ``__rsub__`` (an expression minus it), whether it is an expression and whether a matrix
    (``MatrixExpr`` or an explicit matrix, mutable or not: its ``equals`` is False against what has no shape, and
    it minus anything else, or anything minus it, raises: matrix arithmetic refuses a scalar, a set, a text)."""
    from sympy import Expr, MatrixBase, MatrixExpr
    from sympy.core.relational import Relational
    from sympy.logic.boolalg import Boolean

    if not hasattr(obj, "equals"):
        equals = "none"
    elif isinstance(obj, Boolean) and not isinstance(obj, Relational) and obj.has(Relational):
        equals = "raises"
    else:
        equals = "unknown"
    return {"equals": equals, "lhs": hasattr(obj, "lhs"), "shape": hasattr(obj, "shape"),
            "rsub": hasattr(type(obj), "__rsub__"), "is_expr": isinstance(obj, Expr),
            "matrix": isinstance(obj, (MatrixExpr, MatrixBase))}


def symbolic_facts(text: str, gold_side: bool = False) -> dict:
    """What ``symbolic_equal``'s rules see of one side (see above): its reading's string, float(N(.)), kind,
    value at the point and ``_tree``; for a reading of another kind, ``_other_facts``; for a text on the gold's
    side (no parser read it), also what ``sympify`` makes of it (``Expr.equals``'s step, which the grader runs on
    the gold's text unguarded, as this does): ["expr", value], ["not expr"] (equals gives False) or ["raises"]."""
    import warnings

    warnings.filterwarnings("ignore")
    obj = _parse(text)
    kind, value = _kind_and_value(obj)
    facts = {"str": str(obj), "n": _numeric(obj), "kind": kind, "value": value, "tree": _tree(obj)}
    if kind == "other":
        facts.update(_other_facts(obj))
    if kind == "text" and gold_side:
        from sympy import Expr, sympify

        try:
            other = sympify(obj)
        except Exception:
            facts["sympified"] = ["raises"]
        else:
            facts["sympified"] = ["expr", _kind_and_value(other)[1]] if isinstance(other, Expr) else ["not expr"]
    return facts


# what a text's facts may take (its parse, value, numeric value); a gold's are asked once per process, and an
# overrun only leaves its pairs open, but on a loaded machine evaluate.py's 3 s per grading would leave many
FACTS_SECONDS = 30.0


@lru_cache(maxsize=65536)
def facts_of(text: str, gold_side: bool = False) -> dict | None:
    """``symbolic_facts`` from the bounded child; None: unknown (the child overran ``FACTS_SECONDS``)."""
    return _WORKER.value("facts", text, gold_side, seconds=FACTS_SECONDS)


def _near(a: list | None, b: list | None, modulus: bool = False) -> bool:
    if a is None or b is None:
        return True
    x, y = complex(*a), complex(*b)
    if modulus:
        x, y = abs(x), abs(y)
    return not far(["value", x.real, x.imag], ["value", y.real, y.imag])


def could_symbolic_equal(a: str, b: str) -> bool:
    """False only where ``symbolic_equal(a, b)`` is False (the rules above, on each side's ``facts_of``)."""
    fa, fb = facts_of(a), facts_of(b, True)
    if fa is None or fb is None or fa["str"] == fb["str"]:
        return True
    if fa["n"] is not None and fb["n"] is not None and _close(fa["n"], fb["n"]):
        return True
    kinds = fa["kind"], fb["kind"]
    if "other" in kinds:
        return _could_equal_other(fa, fb)
    if kinds == ("expr", "expr"):
        return _near(fa["value"], fb["value"])
    if kinds == ("relation", "relation"):
        return _near(fa["value"], fb["value"], modulus=True)
    if kinds == ("expr", "text"):
        sympified = fb["sympified"]
        return sympified[0] == "expr" and _near(fa["value"], sympified[1])
    return False  # a text on the answer's side, or an expression against a relation: no rule applies


def _could_equal_other(fa: dict, fb: dict) -> bool:
    """``could_symbolic_equal`` where a side is a set, tuple, matrix, logical formula...: ``a == b`` (their
    ``_tree``s), ``a.equals(b)`` / ``simplify(a - b)`` (a has no ``equals``: the try ends; an expression's
    ``equals`` is False against a non-expression, and ``a - b`` raises unless b has ``__rsub__``; a relation's
    ``equals`` gives None against a non-relation), the relations' rule (both need ``lhs``) and the matrices'
    (both need ``shape``)."""
    if _trees_may_equal(fa["tree"], fb["tree"]):
        return True
    if fa.get("matrix") and not fb.get("shape"):
        return False  # a matrix's equals checks the shape first; a matrix minus anything is never the number 0
    if fb.get("matrix") and not fa.get("shape") and not (fa["kind"] == "other" and fa["equals"] == "unknown"):
        return False  # an expression's equals and a - b raise (matrix arithmetic refuses a scalar); no lhs
    if fa["kind"] == "other":
        if fa["equals"] == "unknown":
            return True
    elif fa["kind"] in ("expr", "relation") and (fb["is_expr"] or fb["rsub"]):
        return True
    lhs = (fa["kind"] == "relation" or fa.get("lhs")) and (fb["kind"] == "relation" or fb.get("lhs"))
    return bool(lhs or (fa.get("shape") and fb.get("shape")))


def could_equal(pred: str, ref: str) -> bool:
    """False only where ``equal(pred, ref)`` is False, for a pair ``decided`` left open: ``full_equal``'s own
    rules, run here, with its symbolic step replaced by ``could_symbolic_equal`` (it is monotone in that step: every
    use is an ``or`` or an ``all``, so a step that says True wherever the real one might gives True wherever the real
    grading might). An error anywhere: True (the grader decides)."""
    try:
        return bool(full_equal(pred, ref, could_symbolic_equal))
    except Exception:
        return True
