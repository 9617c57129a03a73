"""The released CriticEval toolkit's parsing rules (SCHEMA.md 3.1), re-stated as the baseline for comparisons.

Used only by tests (our parse rate must be at least the toolkit's) and benchmarks (its speed). It keeps the
toolkit's ``eval`` of tokens, with no builtins, because that is what produced the published numbers.
"""

import re


def toolkit_math_result(s):
    """``parse_math_result``: the last token that evals to a truthy number, else ''."""
    s = s.replace("\n", " ").replace("=", "= ")
    for token in reversed(s.split()):
        try:
            value = eval(token, {"__builtins__": {}}, {})  # noqa: S307 - the toolkit's own rule
        except Exception:
            continue
        if value and type(value) in (int, float):  # the toolkit's type() test: True and False are not numbers
            return value
    return ""


def toolkit_parse_code(text, lang="python"):
    """``util_func.parse_code``: the first ```python block, else the whole text if it has no fence at all, else ''."""
    match = re.search(rf"```{lang}.*?\s+(.*?)```", text, re.DOTALL)
    if match:
        return match.group(1)
    return text if "```" not in text else ""


def toolkit_extract(s, marker):
    """``extract_decision`` / ``extract_score``: the first marker line, else the math fallback."""
    found = re.findall(f".*({marker}: .+)", s)
    if found:
        rest = found[0].replace(f"{marker}:", "").strip()
        for attempt in (lambda: float(rest), lambda: float(rest.split()[0])):
            try:
                return attempt()
            except Exception:
                pass
    return toolkit_math_result(s)


def toolkit_option(s):
    """``extract_decision_option``'s first character, '' unless it is A, B or C."""
    found = re.findall(".*(Decision: .+)", s)
    option = found[0].replace("Decision:", "").strip() if found else s.replace(".", "").strip()
    return option[:1] if option[:1] in ("A", "B", "C") else ""
