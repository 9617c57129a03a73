"""Every reader of a model's reply takes time linear in the reply (issue 44): what the model under test writes is
adversarial, and one looping reply must not stall a task's scoring.

Three readers ran a regex that retried from every position of a long run and were quadratic: CriticBench's Likert
fallback (spaces, digits, blank lines), the CriticEval toolkit's ``.*(Decision: .+)`` line finder (any long line
without the marker) and the correction's code-fence finder (many unclosed fences); ProcessBench's box reader is
covered in tests/test_processbench.py. Each is rewritten to read the same: the differential tests hold each new
reader to the old regex (written out here as it was) on generated replies; the timing test feeds every registered
reader 1 MB replies of the shapes that were quadratic, and more. A second round: the judge grade's markers, the AIU
verdict word, the chosen letter and the cut-off ending (two adjacent quantifiers that could split one run of spaces
or fillers: cubic or quadratic on a marker and a long run), and the quote finder (each reply line against each quoted
line); the same differential tests, and the timing test's marker-then-run shapes and quoting readers.
"""

from __future__ import annotations

import gc
import random
import re
import textwrap
import time
import warnings

import pytest

from critic_tasks.core import answers, parsing
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
# issue 44's second round: runs of spaces (or fillers) that could split between two adjacent quantifiers
OLD_GRADE = re.compile(r"\bscore\**\s*[:：]\s*\**\s*\[*\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
OLD_GRADE_LINE = re.compile(r"\bscore[\s*_`]*[:：][\s*_`]*\[*\s*(\d+(?:\.\d+)?)\s*\]*(?:\s*/\s*10|\s+out\s+of\s+10)?"
                            r"[\s*_`.]*$", re.IGNORECASE)
OLD_VERDICT_WORD = re.compile(r"^[\s*_`'\"\[(]*(?:verdict\s*[:：]\s*)?[\s*_`'\"\[(]*(true|false|yes|no)\b", re.IGNORECASE)
OLD_LETTER_IN_TEXT = re.compile(r"\b(?:answer|option|choice)\s*(?:is|:)?\s*(?:option\s*)?\(?([a-eA-E])\)?(?!\w)", re.I)
OLD_ENDING = re.compile(r"(?:[.!?。！？।)\]}\"'”’*`>$|%°]|\d\s*[^\s\d]{0,2})\s*$")


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


def _found(pattern: re.Pattern, text: str) -> list:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


# what may stand around a grade, a verdict or a letter: the markers, every kind of space, emphasis, brackets, digits
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\xa0", "\u2003", "\x0b"]


def test_the_grade_markers_find_what_their_old_regexes_found():
    """_GRADE and _GRADE_LINE read the same grades at the same places as the old regexes (cubic and quadratic on a
    run of spaces after the marker or the grade); on whole replies and on each of their lines."""
    pieces = SPACES + ["Score", "score", "SCORE", "Final score", "score:", "Score: ", "**Score:** ", ":", "：", "*", "**",
                       "[", "[[", "]", "]]", "_", "`", "5", "7", "10", "1", "0", ".", ".5", "/", " / 10", "/10", "/ 1",
                       " out of 10", "out", " of ", "10.", "x", "a", "\\boxed{"]
    for text in generated(pieces, 8, count=40000):
        assert _found(parsing._GRADE, text) == _found(OLD_GRADE, text), text
        for line in [text, *text.splitlines()]:
            new, old = parsing._GRADE_LINE.search(line), OLD_GRADE_LINE.search(line)
            assert (new and (new.span(), new.group(1))) == (old and (old.span(), old.group(1))), line


def test_a_verdict_word_is_what_the_old_regex_read():
    pieces = SPACES + ["verdict", "Verdict", "VERDICT:", ":", "：", "*", "**", "_", "`", "'", '"', "[", "(", "true", "True",
                       "FALSE", "false", "yes", "Yes", "no", "No", "not", "x", "1", "1.", "1)", "truex", "verdict: ", "no."]
    for text in generated(pieces, 9, count=40000, longest=12):
        new, old = parsing._VERDICT_WORD.match(text), OLD_VERDICT_WORD.match(text)
        assert (new and (new.span(), new.group(1))) == (old and (old.span(), old.group(1))), text
        line = "1. " + text
        assert parsing._verdict_line(line, 5) == _old_verdict_line(line, 5), line


def _old_verdict_line(line: str, n: int):
    m = parsing._NUMBERED.match(line)
    word = OLD_VERDICT_WORD.match(m.group(2)) if m and m.group(2) else None
    k = int(m.group(1)) if word else 0
    return (k, word.group(1).lower() in ("true", "yes")) if 1 <= k <= n else None


def test_a_chosen_letter_is_what_the_old_regex_found(monkeypatch):
    pieces = SPACES + ["answer", "Answer", "The final answer", "option", "Option", "OPTION", "choice", "Choice", "is", "IS",
                       ":", "(", ")", "a", "B", "c", "D", "e", "E", "f", "x", "1", ".", ",", "_", "isa", "optional",
                       "answeris", "option (", "is option "]
    for text in generated(pieces, 10, count=40000):
        assert _found(answers._LETTER_IN_TEXT, text) == _found(OLD_LETTER_IN_TEXT, text), text
    question = "Which? (A) 12 (B) 14 (C) 16 (D) 18"
    texts = generated(pieces + ["12", "14", "16.", "So "], 11, count=5000)
    mine = [answers.extract_final_answer(text, question) for text in texts]
    monkeypatch.setattr(answers, "_LETTER_IN_TEXT", OLD_LETTER_IN_TEXT)
    assert mine == [answers.extract_final_answer(text, question) for text in texts]


def test_a_reply_is_cut_off_where_the_old_regex_said_so():
    r"""looks_cut_off's ending (``\d\s*[^\s\d]{0,2}`` then ``\s*$``: quadratic on a number, a run of spaces and more
    than two letters) says the same of every reply."""
    pieces = SPACES + ["5", "12", "x", "xx", "分", ".", "!", ")", "]", "m", " meters", "in all", "*", "`", "%", "°", "-",
                       "a", "。", "٣", "_", "/"]
    for text in generated(pieces, 12, count=40000):
        assert bool(parsing._ENDINGS[False].search(text)) == bool(OLD_ENDING.search(text)), text


def test_the_lines_that_end_with_an_echoed_line_are_those_endswith_finds():
    """_ending_with_one_of (sorted reversed lines, a range per ending) finds what each line against each ending
    found: on endings and lines of few letters (many shared ends), the empty ending, and the last code point (the
    end of a range is the ending's last character plus one, carried past U+10FFFF)."""
    top = chr(0x10FFFF)
    pieces = ["a", "b", "ab", " ", top, chr(0x10FFFE), "\ud800", "é", "[[7]]", "7"]
    rng = random.Random(13)
    for _ in range(6000):
        lines = generated(pieces, rng.random(), count=rng.randint(0, 12), longest=6)
        endings = set(generated(pieces, rng.random(), count=rng.randint(0, 6), longest=3))
        if rng.random() < 0.1:
            endings.discard("")
        expected = {line for line in lines if any(line.endswith(e) for e in endings)}
        assert parsing._ending_with_one_of(lines, endings) == expected, (lines, endings)


def _old_unechoed(text, quoted, pattern):
    echoed = parsing._quoted_lines(quoted, pattern.search)
    if not echoed:
        return text or ""
    return "\n".join(line for line in (text or "").splitlines()
                     if not any(parsing._norm(line).endswith(e) for e in echoed if e))


def _old_parse_grade(text, low=1, high=10, quoted=()):
    echoed = parsing._quoted_lines(quoted, OLD_GRADE.search)
    lines = [line for line in (text or "").splitlines() if line.strip()]
    verdict = OLD_GRADE_LINE.search(lines[-1]) if lines else None
    if not verdict or any(parsing._norm(lines[-1]).endswith(e) for e in echoed):
        return None
    value = float(verdict.group(1))
    if not low <= value <= high:
        return None
    own = "\n".join([*(line for line in lines[:-1] if parsing._norm(line) not in echoed), lines[-1][:verdict.start()]])
    if any(float(m.group(1)) != value for m in OLD_GRADE.finditer(own)):
        return None
    return value


def test_replies_that_quote_the_texts_under_test_read_as_before():
    """A reply that repeats lines of the quoted texts (whole, behind a prefix, in other spaces or case) reads as it
    did when each line was held against each quoted line: the grade, the rating, the verdict."""
    pieces = ["Score: 7", "Score: 3", "score:", "Score", ":", "[[7]]", "[[ 3 ]]", "[[A]]", "[[b]]", "[[C]]", "\n", "\n",
              " ", "  ", "\t", "> ", '"', "*", "_", "`", "point", "1", "7", "x", "A", "\r\n", "It says "]
    rng = random.Random(14)
    critiques = generated(pieces, 15, count=8000, longest=10)
    for critique in critiques:
        theirs = critique.splitlines() or [""]
        reply = "\n".join(rng.choice(["", "> ", "  ", "x ", "Score: 7 ", "*"]) + rng.choice([line, line.upper(), line + " "])
                          if rng.random() < 0.6 else rng.choice(critiques)[:20] for line in rng.sample(theirs, len(theirs)))
        reply += rng.choice(["", "\nScore: 7", "\n[[7]]", "\n[[A]]", "\n" + theirs[-1], "\nScore: 3"])
        quoted = [critique, rng.choice(critiques)]
        assert parsing.parse_grade(reply, quoted=quoted) == _old_parse_grade(reply, quoted=quoted), (reply, quoted)
        for pattern in (parsing._BRACKET_RATING, parsing._BRACKET_VERDICT):
            assert parsing._unechoed(reply, quoted, pattern) == _old_unechoed(reply, quoted, pattern), (reply, quoted)


# the three readers whose cost was linear but large (issue 44.2), before the rewrite, as they were
def old_toolkit_last_number(text: str):
    for token in reversed(text.replace("\n", " ").replace("=", "= ").split()):
        try:
            value = toolkit._arithmetic(token)
        except MemoryError:  # the old reader crashed here ("-" * 10**6): the new one reads no number
            value = None
        if value and type(value) in (int, float):
            return value
    return None


def old_extract_code(text):
    if not text:
        return None
    text = text.replace("\r\n", "\n")
    for lang, body, closed in check.fenced_blocks(text):
        lang, body = lang.lower(), textwrap.dedent(body).strip("\n")
        if lang in {"python", "py", "python3", "py3"} and body.strip() and (closed or check._is_program(body)):
            return body
        if lang == "" and check._is_program(body):
            return body
    if "```" not in text and check._is_program(textwrap.dedent(text)):
        return textwrap.dedent(text).strip("\n")
    return None


def old_last_answer_number(text: str):
    numbers = [m for m in answers._NUMBER.finditer(text)
               if not answers._EXPONENT_BEFORE.search(text[max(0, m.start() - 8):m.start()])]
    return numbers[-1] if numbers else None


def _same_number(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return repr(a) == repr(b)  # -0.0 is not 0.0; nan is nan
    return type(a) is type(b) and a == b


def test_the_toolkits_last_number_is_the_last_token_python_reads_as_one():
    """The toolkit's fallback parsed every token (one parse each: seconds on a megabyte of short tokens, a
    MemoryError on a megabyte of minus signs); now a token is parsed only if it can be arithmetic, each distinct
    one once. Same value and type as the parse of every token, on replies of literals of every base, signs,
    operators, brackets, comments, NUL, lone surrogates and non-ASCII digits."""
    pieces = ["1", "0", "9", "12", "007", "0x1f", "0o7", "0b1", "0b2", "_", "1_0", ".", "e", "E", "e-", "+", "-", "*",
              "**", "/", "//", "%", "(", ")", " ", "\n", "=", "#", "#x", "\x00", "\ud800", "é", "j", "a", "x", "1e999",
              "1e5", ".5", "5.", "inf", "nan", "'", "[", "]", ",", "~", "0.0", "-0", "\\", "\t", "\x0c", "٣", "1if",
              "else", "9" * 5000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # "invalid decimal literal": Python's parse says so, either way
        for text in generated(pieces, 4, count=40000, longest=12):
            assert _same_number(toolkit._last_number(text), old_toolkit_last_number(text)), text


def test_the_program_found_in_a_reply_is_what_parsing_every_candidate_found():
    pieces = ["```", "```python\n", "```py\n", "```\n", "```js\n", "\n", "    ", "x = 1", "print(x)", "1.71", "def f():",
              "\n    return 1", "if x:", "(", ")", "é", "\x00", "\r\n", " ", "Here is the fix:", "import os"]
    for text in generated(pieces, 5, count=30000, longest=14):
        assert check.extract_code(text) == old_extract_code(text), text


def test_the_whole_reply_is_parsed_as_a_program_up_to_the_bound():
    """Beyond PARSED_CHARS a reply is not parsed (a counted unparsed revision); up to it, it is."""
    program = "x = 1\n" * (check.PARSED_CHARS // 6)
    assert check.extract_code(program) == program.strip("\n")
    assert check.extract_code(program + "x = 1\n" * 10) is None
    assert check.extract_code("```python\n" + program + "x = 1\n" * 10) is None  # cut off, too long to parse
    assert check.extract_code("```python\n" + program * 3 + "```") == (program * 3).strip("\n")  # closed: no parse


def test_a_replys_last_number_is_the_last_the_scan_from_the_start_finds():
    """extract_final_answer's fallback now scans back from the reply's end; the same match (place and text) as
    the scan of the whole reply, on short replies and on replies longer than its windows."""
    pieces = ["1", "12", "123", ",", ",000", ".", "-", "+", "e", "E", "e-", "/", " / ", " ", "  ", "\n", "%", "^", "**",
              "^{", "{", "}", "x", "a", ")", "(", "\t", "0", "9", "1,234", ".5", "- ", "/ ", " /", "٣", "_"]
    for count, longest, seed in ((30000, 16, 6), (1500, 3000, 7)):
        for text in generated(pieces, seed, count=count, longest=longest):
            new, old = answers._last_number(text), old_last_answer_number(text)
            assert (new and (new.span(), new.group(0))) == (old and (old.span(), old.group(0))), text[-200:]


pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # the old readers parse replies that Python warns about

MEGABYTE = 1_000_000
# the shapes that made a reader quadratic, and the brackets, boxes and markers every reader looks for: each a
# function of the size, whole pieces only (a reply cut inside a piece may take another path)
PIECES = {"unclosed boxes": "\\boxed{", "boxes": "\\boxed{1}", "double brackets": "[[", "bracket digits": "[[1",
          "bracket letters": "[[A", "open braces": "{", "close braces": "}", "digits": "9", "digits and spaces": "9 ",
          "spaces": " ", "blank lines": "\n", "numbered lines": "1.\n", "fences": "```", "python fences": "```python\n",
          "decision markers": "Decision: ", "score markers": "Score: ", "letters": "a", "emphasis": "**",
          "numbers with units": "1 m/", "minus signs": "-", "powers": "1**", "lines of ones": "1\n",
          "exponents": "^1", "negative numbers": "-1", "thousands": "1,000", "fractions": "1/"}
SHAPES = {name: (lambda size, piece=piece: piece * (size // len(piece))) for name, piece in PIECES.items()}
SHAPES["nested braces"] = lambda size: "\\boxed{" + "{" * (size // 2) + "}" * (size // 2)
SHAPES["a long number"] = lambda size: "\\boxed{" + "9" * size + "}"
# a marker, then a long run of what may stand between it and its value, then what may not (issue 44's second round:
# a run that two adjacent quantifiers could split was read in quadratic or cubic time)
RUNS = {"score marker, spaces": ("Score:", " ", "x"), "score marker, no-break spaces": ("**Score**:", "\xa0", "x"),
        "score marker, stars": ("Score:", "*", "x"), "a bracketed score, tabs": ("Score: [[5", "\t", "x"),
        "a score, spaces": ("Score: 5", " ", "x"), "numbered, stars": ("1. ", "*", "x"),
        "numbered, backticks": ("1) ", "`", "x"), "numbered verdict marker, brackets": ("1. Verdict:", "[", "x"),
        "final answer, spaces": ("The final answer", " ", "x."), "choice, blank lines": ("choice", "\n", "x."),
        "option, tabs": ("option", "\t", "x."), "a number, spaces, a word": ("5", " ", "xxx")}
SHAPES.update({name: (lambda size, marker=marker, run=run, end=end: marker + run * size + end)
               for name, (marker, run, end) in RUNS.items()})


def _lines(line: str, size: int) -> str:
    return "".join(line.format(i) for i in range(size // len(line.format(99999))))


# many lines, each with a marker: the texts a judge quotes and its reply (a quote is looked for line by line), and
# lines of grades before a long verdict line (the last line was held against each quoted line)
SHAPES["rating lines"] = lambda size: _lines("[[7]] point {}\n", size)
SHAPES["verdict lines"] = lambda size: _lines("[[A]] point {}\n", size)
SHAPES["numbered verdict lines"] = lambda size: _lines("1. True, point {}\n", size)
SHAPES["score lines, a long verdict line"] = lambda size: (_lines("Score: 7, point {}\n", size // 2)
                                                           + "so " * (size // 6) + "Score: 7")

OPTIONS_QUESTION = "Which is it? (A) 12 (B) 14 (C) 16 (D) 18"


def _quoted(reply: str) -> list[str]:
    """The text a judge was shown, for a reply of that size: as many lines as the reply, none of which a line of the
    reply ends with (each line of the reply was held against each of them)."""
    return [(reply + "\n").replace("\n", " in all\n")]


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
    "final answer (correction)": answers.extract_final_answer,
    "toolkit score": toolkit.parse_score,
    "correction program": check.extract_code,
    "final answer (a question with options)": lambda t: answers.extract_final_answer(t, OPTIONS_QUESTION),
    "judge grade (quoting)": lambda t: parsing.parse_grade(t, quoted=_quoted(t)),
    "bracket rating (quoting)": lambda t: parsing.parse_bracket_rating(t, quoted=_quoted(t), unique=True),
    "bracket verdict (quoting)": lambda t: parsing.parse_bracket_verdict(t, quoted=_quoted(t)),
    "AIU verdicts (quoting)": lambda t: parsing.parse_numbered_verdicts(t, 5, quoted=_quoted(t)),
}


def _best_time(read, text: str) -> float:
    spent = []
    # the best of a few: a shared CI core is not the reader's cost (best of 2 let one load spike on a 1 MB run read
    # as 12x its quarter in CI, though the reader is linear: 0.12 / 0.24 / 0.54 s at 250 KB / 500 KB / 1 MB idle)
    for _ in range(3):
        started = time.perf_counter()
        read(text)
        spent.append(time.perf_counter() - started)
    return min(spent)


def _baseline(text: str) -> float:
    """One plain pass over ``text`` at the speed of Python objects: a regex match object per character. On an idle
    core this takes about 0.04 s for a megabyte, so the issue's "a megabyte in under a second" is about 25 of these;
    measured here, on the same core under the same load, the bound holds on any machine without flaking on a busy
    one."""
    def one_pass(t):
        for _ in re.finditer(r"[\s\S]", t):
            pass
    return _best_time(one_pass, text)


BOUND_IN_PASSES = 25


def _best_times_side_by_side(read, whole_text: str, quarter_text: str, rounds: int = 5) -> tuple[float, float]:
    """The best of a few timings of the whole and its quarter, taken in turns: a load spike on a shared CI core then
    lands on both sizes, not on one (timed apart, one spike read as 9x for a linear reader in the two-worker tier)."""
    whole, quarter = [], []
    gc.collect()
    gc.disable()  # a collection's cost is the test process's heap, not the reader's
    try:
        for _ in range(rounds):
            for text, spent in ((whole_text, whole), (quarter_text, quarter)):
                started = time.perf_counter()
                read(text)
                spent.append(time.perf_counter() - started)
    finally:
        gc.enable()
    return min(whole), min(quarter)


@pytest.mark.slow  # ~8.5 minutes on a loaded 2-core box: 22 readers x 44 shapes of 1 MB
@pytest.mark.serial  # timings: CI runs it with the machine to itself, not beside the two-worker tier's real models
@pytest.mark.parametrize("reader", READERS)
def test_every_reader_reads_a_megabyte_of_any_shape_in_linear_time(reader):
    """Each shape at 1 MB, and its first quarter: a linear reader takes about 4 times as long on the whole, a
    quadratic one 16 (the old Likert fallback took minutes on these). The bound: 1 s on an idle core, as
    BOUND_IN_PASSES plain passes over the same megabyte timed here (see _baseline)."""
    read = READERS[reader]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        for shape, make in SHAPES.items():
            text = make(MEGABYTE)
            whole = _best_time(read, text)
            if whole > 0.2:
                passes = whole / _baseline(text)
                assert passes < BOUND_IN_PASSES, f"{reader} on {shape}: {whole:.2f} s, {passes:.1f} plain passes"
            if whole < 0.1:
                continue  # too fast to tell anything from a ratio (and nothing to fear)
            # a quadratic reader is 16x on every try; a load spike is not (the serial tier's own neighbours on a
            # developer's machine made a linear reader read 9x once): up to three tries, the best ratio counts
            tries = []
            for _ in range(3):
                whole, quarter = _best_times_side_by_side(read, text, make(MEGABYTE // 4))
                tries.append((whole, quarter))
                if whole < 8 * quarter + 0.05:
                    break
            else:
                raise AssertionError(f"{reader} on {shape}: " + "; ".join(
                    f"{whole:.3f} s on 1 MB, {quarter:.3f} s on 250 KB" for whole, quarter in tries))


OLD_BLOCK = re.compile(r"<<<BEGIN (\S+) ([0-9a-f]{12})>>>\n(.*?)\n<<<END \1 \2>>>", re.DOTALL)


def test_a_prompts_blocks_are_the_block_regexs_matches():
    """``quoting.blocks`` finds what the fence regex found (issue 44: it rescanned to the prompt's end from every
    BEGIN line without its END: a MultiCritique paper judge prompt quotes the critique unfenced, and 100 KB of
    BEGIN lines took 2 s), on prompts of BEGIN and END lines of two names and nonces, nested, unclosed, empty."""
    from critic_tasks.core import quoting

    nonce, other = "0123456789ab", "fedcba987654"
    pieces = [f"<<<BEGIN a {nonce}>>>\n", f"<<<BEGIN b {nonce}>>>\n", f"<<<BEGIN a {other}>>>\n", f"\n<<<END a {nonce}>>>",
              f"\n<<<END b {nonce}>>>", f"\n<<<END a {other}>>>", f"<<<END a {nonce}>>>", "\n", "x", " ", "<<<BEGIN ",
              f"<<<BEGIN a b {nonce}>>>\n", ">>>", f"<<<BEGIN a {nonce[:11]}>>>\n"]
    for text in generated(pieces, 7, count=40000, longest=10):
        assert quoting.blocks(text) == [m.group(3) for m in OLD_BLOCK.finditer(text)], text


@pytest.mark.slow
@pytest.mark.serial  # timings (see the megabyte test)
def test_a_prompt_of_many_unclosed_blocks_is_read_in_linear_time():
    from critic_tasks.core import quoting

    def shape(size: int) -> str:
        return "Rate it.\n" + "".join(f"<<<BEGIN a{i} {i:012x}>>>\n" for i in range(size // 32))

    whole, quarter = _best_times_side_by_side(quoting.blocks, shape(MEGABYTE), shape(MEGABYTE // 4), rounds=3)
    assert whole < 8 * quarter + 0.05 and whole < BOUND_IN_PASSES * _baseline(shape(MEGABYTE)), (whole, quarter)
