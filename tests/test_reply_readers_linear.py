"""Every reader of a model's reply takes time linear in the reply (issue 44): what the model under test writes is
adversarial, and one looping reply must not stall a task's scoring.

Three readers ran a regex that retried from every position of a long run and were quadratic: CriticBench's Likert
fallback (spaces, digits, blank lines), the CriticEval toolkit's ``.*(Decision: .+)`` line finder (any long line
without the marker) and the correction's code-fence finder (many unclosed fences); ProcessBench's box reader is
covered in tests/test_processbench.py. Each is rewritten to read the same: the differential tests hold each new
reader to the old regex (written out here as it was) on generated replies; the timing test feeds every registered
reader 1 MB replies of the shapes that were quadratic, and more.
"""

from __future__ import annotations

import random
import re
import time

import pytest

from critic_tasks.core import parsing
from critic_tasks.protocols.criticbench import scoring as criticbench
from critic_tasks.protocols.criticbench import toolkit
from critic_tasks.protocols.criticbench.correction import check
from critic_tasks.protocols.judgebench import scoring as judgebench
from critic_tasks.protocols.processbench import scoring as processbench
from critic_tasks.protocols.realcritic import scoring as realcritic

# the readings before the rewrite, as they were
OLD_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(```|\Z)", re.S)
OLD_ENUMERATOR = re.compile(r"^(\s*)\d+[.)](?=\s)", re.MULTILINE)
OLD_DENOMINATOR = re.compile(r"(?:\s*/\s*\d+(?:\.\d+)?|\s+out\s+of\s+\d+(?:\.\d+)?)")
OLD_NOT_A_SCORE = re.compile(
    r"\b(?:from\s+)?\d+(?:\.\d+)?\s*(?:-|–|—|\bto\b)\s*\d+(?:\.\d+)?"
    r"|\bbetween\s+\d+(?:\.\d+)?\s+and\s+\d+(?:\.\d+)?"
    r"|\d+(?:\.\d+)?\s*(?:x|×|\*)\s*10\s*(?:\^|\*\*)\s*[-+]?\d+"
    r"|(?:\^|\*\*)\s*[-+]?\d+(?:\.\d+)?"
    r"|\d+(?:\.\d+)?[eE][-+]?\d+", re.IGNORECASE)


def generated(pieces: list[str], seed: int, count: int = 30000, longest: int = 16) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, longest))) for _ in range(count)]


def test_the_toolkits_marked_line_is_its_regexs_first_match():
    pieces = ["Decision: ", "Decision:", "Score: ", "\n", " ", "A", "B", "5", "7.5", "x", "\r", "Decision", "\t", "."]
    for text in generated(pieces, 1):
        for marker in ("Decision", "Score"):
            found = re.findall(f".*({marker}: .+)", text)
            assert toolkit.marked_line(text, marker) == (found[0] if found else None), (text, marker)


def test_fenced_blocks_are_the_fence_regexs_matches():
    pieces = ["```", "``", "`", "python", "py", " ", "\t", "\n", "x = 1", "é", "+", ".", "-", "```python\n", "```\n"]
    for text in generated(pieces, 2):
        expected = [(m.group(1), m.group(2), bool(m.group(3))) for m in OLD_FENCE.finditer(text)]
        assert list(check.fenced_blocks(text)) == expected, text


def test_the_likert_fallbacks_passes_strip_what_their_regexes_stripped():
    pieces = ["Decision: ", "Score: ", "决策：", "\n", "\n\n", " ", "  ", "\t", "1", "7", "5.5", "10", "٣", ".", ")",
              "/", " / 7", " out of ", "x", "×", "*", "^", "**", "e", "E", "-", "+", "to", "from ", "between ",
              " and ", "1 to 7", "1.", "2)", "a", "**Decision**:", "\r"]
    for text in generated(pieces, 3, count=60000):
        assert criticbench._drop_enumerators(text) == OLD_ENUMERATOR.sub(r"\1 ", text), text
        assert criticbench._DENOMINATOR.sub(" ", text) == OLD_DENOMINATOR.sub(" ", text), text
        assert criticbench._NOT_A_SCORE.sub(" ", text) == OLD_NOT_A_SCORE.sub(" ", text), text


MEGABYTE = 1_000_000
# the shapes that made a reader quadratic, and the brackets, boxes and markers every reader looks for: each a
# function of the size, whole pieces only (a reply cut inside a piece may take another path)
PIECES = {"unclosed boxes": "\\boxed{", "boxes": "\\boxed{1}", "double brackets": "[[", "bracket digits": "[[1",
          "bracket letters": "[[A", "open braces": "{", "close braces": "}", "digits": "9", "digits and spaces": "9 ",
          "spaces": " ", "blank lines": "\n", "numbered lines": "1.\n", "fences": "```", "python fences": "```python\n",
          "decision markers": "Decision: ", "score markers": "Score: ", "letters": "a", "emphasis": "**"}
SHAPES = {name: (lambda size, piece=piece: piece * (size // len(piece))) for name, piece in PIECES.items()}
SHAPES["nested braces"] = lambda size: "\\boxed{" + "{" * (size // 2) + "}" * (size // 2)
SHAPES["a long number"] = lambda size: "\\boxed{" + "9" * size + "}"

READERS = {
    "criticbench likert (Decision)": lambda t: criticbench.parse_likert(t, "Decision"),
    "criticbench likert (Score)": lambda t: criticbench.parse_likert(t, "Score"),
    "criticbench verdict": criticbench.parse_verdict,
    "toolkit verdict": toolkit.parse_verdict,
    "toolkit marked line": lambda t: toolkit.marked_line(t, "Decision"),
    "correction fences": lambda t: list(check.fenced_blocks(t)),
    "bracket rating (CritiqueLLM)": parsing.parse_bracket_rating,
    "bracket verdict (CritiqueLLM)": parsing.parse_bracket_verdict,
    "judge grade": parsing.parse_grade,
    "AIU verdicts (MetaCritique)": lambda t: parsing.parse_numbered_verdicts(t, 5),
    "judgebench verdict": judgebench.parse_verdict,
    "processbench index": processbench.read_index,
    "realcritic answer": lambda t: realcritic.read_answer(t, False),
    "realcritic choice": lambda t: realcritic.read_answer(t, True),
}


def _best_time(read, text: str) -> float:
    spent = []
    for _ in range(2 if len(text) > MEGABYTE // 2 else 3):  # the best of a few: a shared CI core is not the reader's cost
        started = time.perf_counter()
        read(text)
        spent.append(time.perf_counter() - started)
    return min(spent)


@pytest.mark.slow  # ~1 minute on a shared core: 14 readers x 20 shapes of 1 MB
@pytest.mark.parametrize("reader", READERS)
def test_every_reader_reads_a_megabyte_of_any_shape_in_linear_time(reader):
    """Each shape at 1 MB, and its first quarter: a linear reader takes about 4 times as long on the whole, a
    quadratic one 16 (the old Likert fallback took minutes on these). The absolute bound leaves room for a busy
    shared core: on an idle one every reader here reads each shape in well under a second."""
    read = READERS[reader]
    for shape, make in SHAPES.items():
        whole = _best_time(read, make(MEGABYTE))
        assert whole < 2.0, f"{reader} on {shape}: {whole:.2f} s"
        if whole < 0.2:
            continue  # too fast to tell anything from a ratio (and nothing to fear)
        quarter = _best_time(read, make(MEGABYTE // 4))
        assert whole < 8 * quarter + 0.05, f"{reader} on {shape}: {whole:.3f} s on 1 MB, {quarter:.3f} s on 250 KB"
