"""The Chinese edition's house style (CONTRIBUTING.md, "Chinese house style"; issue 44), held on every catalog:

- a percentage without a space (20%), a four-digit count without a comma (4000 步), a round count from 1 万 up in 万
  or 亿 (3.7 万, 6500 万), an exact count from 1 万 up grouped by commas as the code prints it (63,082,496);
- full-width punctuation in Chinese text: a run-in head is bold without its colon (**目标**：以…), never followed by
  a space; no space between a Chinese character and a Chinese quotation mark; quotation marks open with “;
- a year in full-width brackets after Chinese (作者 等（年份）), never (1994); no brackets inside brackets;
- a work once: a citation role renders 作者 等（年份） itself, so no message writes them out beside it as well;
- a book's title in 《》: 《动手学深度学习》, 《The Annotated Transformer》.

Code, math, roles and link targets are left out: they are what the English has.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

LOCALE = Path(__file__).resolve().parents[1] / "locale" / "zh_CN" / "LC_MESSAGES"
_CJK = "\u4e00-\u9fff"
_LEFT_OUT = re.compile(r"\{[\w:-]+\}`[^`]*`|(`+).+?\1|\$\$.+?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>\s]*>", flags=re.S)
_CITE = re.compile(r"\{cite:[pt]\}`([a-z]+)(\d{4})\w*`")  # bibliography keys read surname + year: vaswani2017attention


def _round(digits: str) -> bool:
    """A count of at most three significant digits: 37,000 or 1,000,000, not 63,082,496."""
    return len(digits.rstrip("0")) <= 3


RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "percent": (re.compile(r"\d\s+[%％]"), "a percentage without a space: 20%"),
    "four digits": (re.compile(r"(?<![\d,.])\d,\d{3}(?![\d,])"), "a four-digit count without a comma: 4000"),
    "run-in head": (re.compile(r"[：:]\*\*\s|\*\*\s*[：:]\s"), "a run-in head **目标**：以…, no space after it"),
    "quote spacing": (re.compile(rf"[{_CJK}，。；：] [“”]|[“”] [{_CJK}，。；：]"), "no space beside “ ” in Chinese"),
    "half-width year": (re.compile(rf"[{_CJK}]\s?\((?:1|2)\d{{3}}\)"), "a year in full-width brackets: 等（1994）"),
    "unit brackets": (re.compile(rf"[{_CJK}] ?\((?:[mµ]?s|[KMGT]i?B|T?FLOPs?)\)"), "a unit in brackets: 时间（ms）"),
    "nested brackets": (re.compile(r"（[^（）]*（[^（）]*）[^（）]*）"), "no brackets inside brackets"),
    "book title": (re.compile(r"(?<!《)(?:动手学深度学习|The Annotated Transformer)(?!》)"), "a book's title in 《》"),
}


def style_problems(msgstr: str) -> list[str]:
    """The house-style rules a translation breaks, each with what it found.

    >>> style_problems("增大超过 20 %")
    ["percent: '0 %' (a percentage without a space: 20%)"]
    >>> style_problems("**目标：** 以第 6 章为基础，在 4000 步内（见 3.7 万个参数）")
    ["run-in head: '：** ' (a run-in head **目标**：以…, no space after it)"]
    """
    text = _LEFT_OUT.sub("\ue000", msgstr)  # a placeholder that is neither a space nor punctuation
    found = [
        f"cited twice: {m.group(0)!r} (the role writes 作者 等（年份）: cite with {{cite:t}} alone)"
        for m in _CITE.finditer(msgstr)
        if re.search(rf"{m.group(1)}[^（()）{{]{{0,40}}[（(]{m.group(2)}[）)]", msgstr, flags=re.I)
    ]
    found += [
        f"{name}: {m.group(0)!r} ({use})"
        for name, (p, use) in RULES.items()
        # a quotation may show brackets as they are printed (the bibliography's “（Vaswani 等，2017）”)
        for m in p.finditer(re.sub(r"“[^”]*”", "“”", text) if name == "nested brackets" else text)
    ]
    for m in re.finditer(r"(?<![\d,.])\d{1,3}(?:,\d{3})+(?![\d,])", text):
        if int(m.group(0).replace(",", "")) >= 10_000 and _round(m.group(0).replace(",", "")):
            found.append(f"round count: {m.group(0)!r} (a round count in 万 or 亿: 37,000 is 3.7 万)")
    opened = False
    for mark in re.findall(r"[“”]", text):
        if (mark == "“") == opened:
            found.append(f"quotes: {mark!r} where {'”' if opened else '“'} belongs (quotation marks open with “)")
            break
        opened = not opened
    return found


def _messages():
    for path in sorted(LOCALE.rglob("*.po")):
        with open(path, "rb") as f:
            for message in read_po(f):
                if message.id and isinstance(message.string, str) and message.string and message.string != message.id:
                    yield path.relative_to(LOCALE).with_suffix("").as_posix(), message.id, message.string


def test_every_catalog_keeps_the_house_style() -> None:
    problems = [f"{page}: {p}: {msgstr[:50]!r}" for page, _, msgstr in _messages() for p in style_problems(msgstr)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "planted",
    [
        "在 12 层的栈中增大超过 20 %",
        "在 4,000 步内逐渐增大",
        "词表有 37,000 个词元",
        "**目标：** 编码器层的其余部分",
        "笔记说 “插值能力” 并不成立",
        "Bengio 等 (1994) 指出",
        "三个模型（纯编码器（BERT）与纯解码器）",
        "见动手学深度学习第 10 章",
        "”反了“的引号",
        "权重内存 (MB)",
        "Vaswani 等（2017），*Attention Is All You Need*{cite:p}`vaswani2017attention`。",
        "Bahdanau、Cho 和 Bengio（2015），把翻译中的注意力看作对齐{cite:p}`bahdanau2015attention`。",
    ],
)
def test_a_planted_variant_breaks_the_style(planted: str) -> None:
    assert style_problems(planted), planted


def test_what_the_style_allows() -> None:
    assert not style_problems("**目标**：共有 6300 万个参数，精确地说是 63,082,496 个；增大 20%，在 4000 步内。")
    assert not style_problems("《动手学深度学习》说“值”；Bengio 等（1994）；`x = 4,000` 与 $10,000$ 是代码和公式")
    assert not style_problems("{cite:t}`vaswani2017attention`，*Attention Is All You Need*：表 1；Wu 等（2016）")
