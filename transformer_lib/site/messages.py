"""What a translated message must keep exactly as its English has it: inline math, code spans, roles (with their
target), link targets and numbers (a magnitude may change its words: 43.6 million is 4360 万), and the shape of a
Markdown block. ``tests/test_i18n.py`` holds every catalog to :func:`message_problems`."""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["kept_parts", "message_problems"]

# What a translation must keep exactly as the English message has it: inline math, code spans, roles (with their
# target), link targets and numbers. Order: each pattern is removed from the text before the next one looks.
_KEPT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("code", re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")),
    ("math", re.compile(r"\$\$.+?\$\$|\$[^$\s](?:[^$]*?[^$\s])?\$")),
    ("link", re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>|(?<![(<\w])(https?://[^\s)>]+)")),
    # a number is digits not inside a Latin word or name (W2, d2l); one against a Chinese character counts ("为1")
    ("number", re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)*(?![A-Za-z0-9_])|(?<=§)\d+(?:\.\d+)*")),
)
_ROLE = re.compile(r"\{([\w:-]+)\}")
_RST_ROLE = re.compile(r"(?<![\w`{}]):([\w-]+(?::[\w-]+)?):(?=`)")  # a docstring's :class:`x`


def kept_parts(text: str) -> dict[str, Counter]:
    """The parts of a message that its translation keeps unchanged, counted by kind (``code``, ``role``, ``math``,
    ``link``, ``number``). A role's displayed text may be translated: only its name and target count
    (``{term}`词元 <token>``` keeps ``{term}`` and ``token``).

    >>> parts = kept_parts("Divide by $d_k$, see {doc}`4 <04_attention>` and `tl.x` (§3.2.1, 2 times)")
    >>> {kind: sorted(found) for kind, found in parts.items() if found}
    {'role': ['{doc}04_attention'], 'code': ['tl.x'], 'math': ['$d_k$'], 'number': ['2', '3.2.1']}
    """
    found: dict[str, Counter] = {"role": Counter()}
    rest = text
    for match in re.finditer(r"\{([\w:-]+)\}(`+)(.+?)\2", rest):  # roles first: their content is not a code span
        content = match.group(3)
        target = re.search(r"<([^<>]+)>\s*$", content)
        found["role"][f"{{{match.group(1)}}}{(target.group(1) if target else content).strip()}"] += 1
    rest = re.sub(r"\{([\w:-]+)\}(`+)(.+?)\2", " ", rest)
    for kind, pattern in _KEPT:
        found[kind] = Counter()
        for match in pattern.finditer(rest):
            if kind == "code":
                found[kind][match.group(2).strip()] += 1
            elif kind == "link":
                found[kind][next(g for g in match.groups() if g)] += 1
            else:
                found[kind][match.group(0)] += 1
        rest = pattern.sub(" ", rest)
    return found


# A count in millions or billions reads in 万 and 亿 in Chinese (43.6 million = 4360 万, 4.5 M = 450 万): both sides
# are compared as the whole number they stand for.
_MAGNITUDE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*|-)(million|billion|M|B|万|亿)(?![A-Za-z])")
_SCALE = {"million": 10**6, "M": 10**6, "billion": 10**9, "B": 10**9, "万": 10**4, "亿": 10**8}


# A thousands separator (4,000; 37,000): both sides are compared without it
_GROUPING = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _whole_numbers(text: str) -> str:
    """``text`` with each count in millions, billions, 万 or 亿 written out as the whole number it stands for.

    >>> _whole_numbers("43.6 million adds"), _whole_numbers("4360 万次乘加"), _whole_numbers("a 65-million model")
    ('43600000  adds', '43600000 次乘加', 'a 65000000  model')
    >>> _whole_numbers("37,000 tokens, 4,000 steps"), _whole_numbers("3.7 万个词元，4000 步")
    ('37000 tokens, 4000 steps', '37000 个词元，4000 步')
    """
    from decimal import Decimal

    text = _GROUPING.sub("", text)  # 4,000 is 4000: the Chinese house style drops a four-digit count's comma
    return _MAGNITUDE.sub(lambda m: f"{int(Decimal(m[1]) * _SCALE[m[2]])} ", text)


# A translation that starts like a Markdown list item ("1. 标题", "- ...") is parsed as a list when Sphinx puts it
# back into the page, and Sphinx then silently keeps the English text of the heading or paragraph
_BLOCK_START = re.compile(r"^(?:\d+[.)]|[-+*])\s")


def message_problems(msgid: str, msgstr: str, *, markdown: bool = True) -> list[str]:
    """What a translation changed that it must keep (empty when nothing): each kind whose parts differ, with both.

    >>> message_problems("Five tokens have 15 pairs", "5 个词元有 16 对")
    ["number: the English has ['15'], the translation ['16', '5']"]
    """
    problems = []
    if markdown and _BLOCK_START.match(msgstr):  # a catalog message; a figure label is not Markdown
        problems.append(
            f"list: {msgstr[:12]!r}... starts like a list item, so the page keeps its English; escape it ('1\\. ')"
        )
    # A docstring's RST role (book/api.md) must become the MyST role: Sphinx parses a Markdown page's translation
    # as Markdown, where :class:`x` is plain text, and -W fails on the reference it loses.
    english = kept_parts(_whole_numbers(_RST_ROLE.sub(r"{\1}", msgid)))
    chinese = kept_parts(_whole_numbers(msgstr))
    for kind in english:
        if english[kind] != chinese[kind]:
            problems.append(
                f"{kind}: the English has {sorted(english[kind].elements())}, "
                f"the translation {sorted(chinese[kind].elements())}"
            )
    return problems


# The site's own words, outside the prose (the pages' catalogs), the figures (figures.po) and the theme (booktheme.po,
# sphinx.po): English msgids of the project's site.po, each given to the place that shows it in a Chinese build.
