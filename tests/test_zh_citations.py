"""Citations on the Chinese site read 作者 等（年份）and（作者 等，年份）, not "Vaswani et al. [2017]".

The English site keeps sphinxcontrib-bibtex's author_year style.

``{cite:t}`` and ``{cite:p}`` are written by sphinxcontrib-bibtex's referencing style; the Chinese build uses
:class:`transformer_lib.site.citations.ChineseAuthorYearStyle` (issue 37). The unit tests format entries of
book/references.bib with both styles and build a one-page Sphinx project in each language; the last test reads
the built Chinese site (run after the build).
"""

from __future__ import annotations

import re
import types
from pathlib import Path

import docutils.nodes
import pybtex.plugin
import pytest
from pybtex.database import parse_file
from sphinxcontrib.bibtex.style.referencing import BaseReferenceStyle, format_references
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.template import SphinxReferenceInfo

from transformer_lib.site.citations import STYLE_NAME, ChineseAuthorYearStyle, use_chinese_citations

ROOT = Path(__file__).resolve().parents[1]
ZH_SITE = ROOT / "_build" / "html" / "zh"
BIB = parse_file(ROOT / "book" / "references.bib")


def cite(style: BaseReferenceStyle, role: str, *keys: str, post: str = "") -> str:
    """The text of ``{cite:<role>}`key1,key2```, as sphinxcontrib-bibtex formats it for an HTML page."""
    builder = types.SimpleNamespace(name="html", get_relative_uri=lambda here, there: "bibliography.html")
    info = SphinxReferenceInfo(builder, "book/intro", "book/bibliography", "id1", None, "", post)  # type: ignore[arg-type]
    references = [(BIB.entries[key], None, info) for key in keys]
    node = docutils.nodes.inline()
    node += format_references(style, role, references).render(
        pybtex.plugin.find_plugin("pybtex.backends", "docutils")()
    )
    return node.astext()


def test_the_chinese_style_writes_deng_and_full_width_brackets() -> None:
    zh = ChineseAuthorYearStyle()
    assert cite(zh, "t", "vaswani2017attention") == "Vaswani 等（2017）"
    assert cite(zh, "p", "vaswani2017attention") == "（Vaswani 等，2017）"
    assert cite(zh, "t", "hochreiter1997lstm") == "Hochreiter 和 Schmidhuber（1997）"
    assert cite(zh, "p", "vaswani2017attention", "ba2016layernorm") == "（Vaswani 等，2017；Ba 等，2016）"
    assert cite(zh, "p", "vaswani2017attention", post="§3.2") == "（Vaswani 等，2017，§3.2）"
    assert cite(zh, "ts", "ba2016layernorm") == "Ba、Kiros 和 Hinton（2016）"


def test_the_english_style_is_unchanged() -> None:
    en = AuthorYearReferenceStyle()
    assert cite(en, "t", "vaswani2017attention") == "Vaswani et al. [2017]"
    assert cite(en, "p", "vaswani2017attention") == "[Vaswani et al., 2017]"


@pytest.mark.parametrize(("language", "style"), [("zh_CN", STYLE_NAME), ("en", "author_year"), (None, "author_year")])
def test_only_a_chinese_build_cites_in_chinese(language: str | None, style: str) -> None:
    config = types.SimpleNamespace(language=language, bibtex_reference_style="author_year")
    use_chinese_citations(None, config)
    assert config.bibtex_reference_style == style


def _build(tmp_path: Path, language: str) -> str:
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "conf.py").write_text(
        "extensions = ['sphinxcontrib.bibtex', 'transformer_lib.site.i18n']\n"
        f"bibtex_bibfiles = [{str(ROOT / 'book' / 'references.bib')!r}]\n"
        "bibtex_reference_style = 'author_year'\nhtml_search_language = 'en'\n",
        encoding="utf-8",
    )
    (src / "index.rst").write_text(
        "Title\n=====\n\n:cite:t:`vaswani2017attention` and :cite:p:`ba2016layernorm`.\n\n.. bibliography::\n",
        encoding="utf-8",
    )
    out = tmp_path / f"html-{language}"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / f"doctrees-{language}"), "html",
                 confoverrides={"language": language}, status=None, warning=None, freshenv=True)  # fmt: skip
    app.build()
    html = (out / "index.html").read_text(encoding="utf-8")
    return re.sub(r"<[^>]+>", "", html.split('<section id="title">', 1)[1].split("</p>", 1)[0])


def test_a_chinese_sphinx_build_uses_the_chinese_style(tmp_path: Path) -> None:
    assert "Vaswani 等（2017） and （Ba 等，2016）" in _build(tmp_path, "zh_CN")
    assert "Vaswani et al. [2017] and [Ba et al., 2016]" in _build(tmp_path, "en")


_CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")
_ENGLISH_CITATION = re.compile(r"\bet al\b|\[(?:[^\]]*, )?\d{4}\]")
_BLOCK = re.compile(r"<(p|li|dd|dt|td|th|h[1-6]|figcaption|caption|summary)\b[^>]*>(.*?)</\1>", re.S)


def english_citations(html: str) -> list[str]:
    """The blocks of a page's text (paragraphs, list items, headings, captions) that are Chinese and cite in the
    English way: "et al." or a year in square brackets ("Cho [2014]", "[Cho, 2014]").

    >>> english_citations("<p>论文 [Vaswani <em>et al.</em>, 2017] 表 1</p>")
    ['论文 [Vaswani et al., 2017] 表 1']
    >>> english_citations("<li>LSTM [Hochreiter and Schmidhuber, 1997] 或 GRU</li><li>Rush [2018]：逐行</li>")
    ['LSTM [Hochreiter and Schmidhuber, 1997] 或 GRU', 'Rush [2018]：逐行']
    >>> english_citations("<p>论文（Vaswani 等，2017）表 1</p><pre>Vaswani et al.</pre><p>Vaswani et al. (2017)</p>")
    []
    """
    html = re.sub(r"<(script|style|pre)\b.*?</\1>", " ", html, flags=re.S)
    problems = []
    for _, block in _BLOCK.findall(html):
        text = " ".join(re.sub(r"<[^>]+>", "", block).split())
        if _CJK.search(text) and _ENGLISH_CITATION.search(text):
            problems.append(text)
    return problems


def test_a_chinese_sentence_with_et_al_is_found() -> None:
    assert english_citations("<li><p>见 Cho <em>et al.</em> [2014]（GRU）</p></li>")
    assert not english_citations("<li><p>见 Cho 等（2014）（GRU）</p></li>")


@pytest.mark.browser
def test_no_chinese_page_cites_the_english_way() -> None:
    """Every page of the built Chinese book (the modules' source pages are English code)."""
    if not (ZH_SITE / "index.html").exists():
        pytest.skip(f"no built Chinese site in {ZH_SITE}: run scripts/i18n.py build first")
    pages = sorted((ZH_SITE / "book").rglob("*.html"))
    assert pages, f"no page in {ZH_SITE / 'book'}"
    problems = [f"{p.relative_to(ZH_SITE)}: {t[:160]}" for p in pages for t in english_citations(p.read_text("utf-8"))]
    assert not problems, f"{len(problems)} Chinese sentences cite the English way:\n" + "\n".join(problems[:40])
