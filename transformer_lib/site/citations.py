"""Citations in Chinese sentences: 作者 等（年份）, not "Vaswani et al. [2017]" (issue 37).

sphinxcontrib-bibtex writes ``{cite:t}`` and ``{cite:p}`` with a *referencing style*, a plugin named by
``bibtex_reference_style``; the English site uses its ``author_year``: "Vaswani et al. [2017]" and
"[Vaswani et al., 2017]". :class:`ChineseAuthorYearStyle` is the same style with Chinese words and full-width
punctuation: "Vaswani 等（2017）" and "（Vaswani 等，2017）", two authors joined by 和, several works by ；.
:func:`use_chinese_citations` registers it and chooses it when a build's language is Chinese
(``transformer_lib.site.i18n`` calls it when the configuration is read), so the English build keeps its style.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sphinxcontrib.bibtex.plugin import register_plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle, PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

STYLE_NAME = "author_year_zh"  # the name the Chinese build gives ``bibtex_reference_style``
_GROUP = "sphinxcontrib.bibtex.style.referencing"


def _brackets() -> BracketStyle:
    """Full-width brackets; several works in one citation separated by a full-width semicolon."""
    return BracketStyle(left="（", right="）", sep="；")


def _persons() -> PersonStyle:
    """Surnames as written, 等 after the first of three or more, 和 between two (、 in a full list)."""
    return PersonStyle(sep="、", sep2=" 和 ", last_sep=" 和 ", other=" 等")


@dataclass
class ChineseAuthorYearStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's ``author_year`` in Chinese: Vaswani 等（2017）and（Vaswani 等，2017）."""

    bracket_textual: BracketStyle = field(default_factory=_brackets)
    bracket_parenthetical: BracketStyle = field(default_factory=_brackets)
    bracket_author: BracketStyle = field(default_factory=_brackets)
    bracket_label: BracketStyle = field(default_factory=_brackets)
    bracket_year: BracketStyle = field(default_factory=_brackets)
    person: PersonStyle = field(default_factory=_persons)
    author_year_sep: Any = "，"
    text_reference_sep: Any = ""  # Vaswani 等（2017）: no space before a full-width bracket
    pre_text_sep: Any = " "
    post_text_sep: Any = "，"


def use_chinese_citations(app: Any, config: Any) -> None:
    """At ``config-inited``: on a Chinese build, cite with :class:`ChineseAuthorYearStyle`.

    Only the book's own choice (``author_year``) is replaced; sphinxcontrib-bibtex reads the setting when the
    builder starts, after this."""
    register_plugin(_GROUP, STYLE_NAME, ChineseAuthorYearStyle, force=True)
    language = getattr(config, "language", None) or "en"
    if language.startswith("zh") and getattr(config, "bibtex_reference_style", None) == "author_year":
        config.bibtex_reference_style = STYLE_NAME
