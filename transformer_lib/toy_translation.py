"""The toy translation task of chapters 2 and 7: English -> "Frenchy", generated and translated by rule.

Nothing here downloads anything: the corpus is generated from a seed, so the same seed always gives the same
sentences. Frenchy's word order differs from English (adjectives follow the noun, ``ne ... pas`` wraps the verb),
so cross-attention maps show the reordering; :func:`alignment` gives the gold word alignment to compare them with.
The grammar's word lists (``NOUNS``, ``ADJECTIVES``, ``DETERMINERS``, ``VERBS``) are module constants a chapter
can show. :mod:`transformer_lib.data` re-exports every name of this module.
"""

from __future__ import annotations

import random
import re

from .validation import check_positive, check_str

__all__ = [
    "translate",
    "normalize_sentence",
    "alignment",
    "toy_translation_corpus",
]

# Nouns: English singular, English plural, Frenchy singular, Frenchy plural, gender ("m" / "f").
NOUNS = [
    ("cat", "cats", "chat", "chats", "m"),
    ("dog", "dogs", "chien", "chiens", "m"),
    ("bird", "birds", "oiseau", "oiseaux", "m"),
    ("horse", "horses", "cheval", "chevaux", "m"),
    ("boy", "boys", "garcon", "garcons", "m"),
    ("friend", "friends", "ami", "amis", "m"),
    ("book", "books", "livre", "livres", "m"),
    ("tree", "trees", "arbre", "arbres", "m"),
    ("girl", "girls", "fille", "filles", "f"),
    ("house", "houses", "maison", "maisons", "f"),
    ("car", "cars", "voiture", "voitures", "f"),
    ("apple", "apples", "pomme", "pommes", "f"),
    ("flower", "flowers", "fleur", "fleurs", "f"),
    ("table", "tables", "table", "tables", "f"),
    ("mouse", "mice", "souris", "souris", "f"),
    ("woman", "women", "femme", "femmes", "f"),
]
# Adjectives: English, Frenchy masculine, Frenchy feminine. Unlike real French, every one follows the noun.
ADJECTIVES = [
    ("red", "rouge", "rouge"),
    ("big", "grand", "grande"),
    ("small", "petit", "petite"),
    ("black", "noir", "noire"),
    ("white", "blanc", "blanche"),
    ("green", "vert", "verte"),
    ("old", "vieux", "vieille"),
    ("young", "jeune", "jeune"),
    ("happy", "heureux", "heureuse"),
    ("blue", "bleu", "bleue"),
]
# Determiners: English -> (number it requires or None, masculine singular, feminine singular, plural).
DETERMINERS = {
    "the": (None, "le", "la", "les"),
    "a": ("sg", "un", "une", None),
    "some": ("pl", None, None, "des"),
    "this": ("sg", "ce", "cette", None),
    "these": ("pl", None, None, "ces"),
    "my": (None, "mon", "ma", "mes"),
    "your": (None, "ton", "ta", "tes"),
    "our": (None, "notre", "notre", "nos"),
}
# Verbs: English 3rd person singular, English base (= plural), Frenchy singular, Frenchy plural, transitive.
VERBS = [
    ("sees", "see", "voit", "voient", True),
    ("likes", "like", "aime", "aiment", True),
    ("eats", "eat", "mange", "mangent", True),
    ("follows", "follow", "suit", "suivent", True),
    ("finds", "find", "trouve", "trouvent", True),
    ("watches", "watch", "regarde", "regardent", True),
    ("carries", "carry", "porte", "portent", True),
    ("sleeps", "sleep", "dort", "dorment", False),
    ("runs", "run", "court", "courent", False),
    ("sings", "sing", "chante", "chantent", False),
    ("waits", "wait", "attend", "attendent", False),
]
_NOUN_FORMS = {w: (entry, num) for entry in NOUNS for w, num in ((entry[0], "sg"), (entry[1], "pl"))}
_ADJ = {entry[0]: entry for entry in ADJECTIVES}
_VERB_FORMS = {w: (entry, num) for entry in VERBS for w, num in ((entry[0], "sg"), (entry[1], "pl"))}


def _noun_phrase(words: list[str], i: int) -> tuple[list[str], list[tuple[int, int]], str, int]:
    """Translate the noun phrase starting at ``words[i]``: determiner, adjectives, noun -> det, noun, adjectives.

    Returns the Frenchy words, the alignment (source index, index within the returned words), the number
    ("sg"/"pl") and the index after the phrase.
    """
    det = words[i] if i < len(words) else "<end>"
    if det not in DETERMINERS:
        raise ValueError(f"sentence: expected a determiner {sorted(DETERMINERS)} at word {i}, got {det!r}")
    j = i + 1
    while j < len(words) and words[j] in _ADJ:
        j += 1
    if j >= len(words) or words[j] not in _NOUN_FORMS:
        got = words[j] if j < len(words) else "<end>"
        raise ValueError(f"sentence: expected an adjective or a noun at word {j}, got {got!r}")
    (_, _, fr_sg, fr_pl, gender), number = _NOUN_FORMS[words[j]]
    required, m_sg, f_sg, pl = DETERMINERS[det]
    if required not in (None, number):
        raise ValueError(f"sentence: expected a {required} noun after {det!r}, got {words[j]!r}")
    plural = number == "pl"
    fem = gender == "f"
    det_form = pl if plural else (f_sg if fem else m_sg)
    if det_form is None:  # DETERMINERS has no form for this gender and number
        raise ValueError(f"sentence: {det!r} has no {'plural' if plural else gender} form, before {words[j]!r}")
    out = [det_form, fr_pl if plural else fr_sg]
    links = [(i, 0), (j, 1)]
    for k in range(i + 1, j):  # each adjective moves behind the noun and agrees with it (gender, then -s)
        form = _ADJ[words[k]][2 if fem else 1]
        out.append(form + "s" if plural and not form.endswith(("s", "x")) else form)
        links.append((k, len(out) - 1))
    return out, links, number, j + 1


def _translate_aligned(sentence: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Translate an English sentence of the toy grammar; return the Frenchy words and the gold alignment."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence: expected a str, got {type(sentence).__name__}")
    words = sentence.lower().split()
    out, links, number, i = _noun_phrase(words, 0)
    negated = i + 1 < len(words) and words[i] in ("does", "do") and words[i + 1] == "not"
    if negated:
        aux = {"sg": "does", "pl": "do"}[number]
        if words[i] != aux:
            raise ValueError(f"sentence: expected {aux!r} after a {number} subject, got {words[i]!r}")
        links += [(i, len(out) + 1), (i + 1, len(out)), (i + 1, len(out) + 2)]  # does -> verb, not -> ne, pas
        out.append("ne")
        i += 2
    if i >= len(words) or words[i] not in _VERB_FORMS:
        raise ValueError(f"sentence: expected a verb at word {i}, got {(words + ['<end>'])[i]!r}")
    (_, _, v_sg, v_pl, transitive), form = _VERB_FORMS[words[i]]
    form_needed = "base" if negated or number == "pl" else "singular"  # after "does not": the base form
    if form != ("pl" if form_needed == "base" else "sg"):
        raise ValueError(f"sentence: expected the {form_needed} form of the verb at word {i}, got {words[i]!r}")
    links.append((i, len(out)))
    out += [v_sg if number == "sg" else v_pl] + (["pas"] if negated else [])
    i += 1
    if transitive:
        obj, obj_links, _, i = _noun_phrase(words, i)
        links += [(s, len(out) + t) for s, t in obj_links]
        out += obj
    if i != len(words):
        raise ValueError(f"sentence: expected the end after word {i - 1}, got {' '.join(words[i:])!r}")
    return out, sorted(links)


_NOT_A_WORD = re.compile(r"[^\w\s]+")


def normalize_sentence(text: str) -> str:
    """The form every sentence of the toy translation task is written in: lower case, no punctuation, one space.

    One rule for every place a reader's text meets the toy translator: letters are lower-cased, every run of
    characters that are neither word characters (letters, digits, ``_``) nor white space becomes a space, and runs
    of white space become one space, with none at either end. The grammar writes no capitals and no punctuation,
    so a sentence of :func:`toy_translation_corpus` is unchanged. Chapter 7's live translator applies the same
    rule in the browser (``book/_static/translator/model.js``, ``normalizeSentence``; a browser test compares
    the two token for token).

    >>> normalize_sentence("  The big  mouse likes this black table. ")
    'the big mouse likes this black table'
    >>> normalize_sentence("the cat, the dog!")
    'the cat the dog'
    """
    check_str(text)
    return " ".join(_NOT_A_WORD.sub(" ", text.lower()).split())


def translate(sentence: str) -> str:
    """Translate an English sentence of the toy grammar into Frenchy, by rule.

    Grammar: ``NP [does|do not] VERB [NP]`` with ``NP = DET ADJ* NOUN``. Rules: adjectives follow the noun;
    determiners and adjectives agree with the noun in gender and number (plural adds -s); negation wraps the
    verb in ``ne ... pas``. Raises ValueError, naming the word, for a sentence outside the grammar.

    >>> translate("the red cat sees a small house")
    'le chat rouge voit une maison petite'
    """
    return " ".join(_translate_aligned(sentence)[0])


def alignment(src: str, tgt: str) -> list[tuple[int, int]]:
    """Gold word alignment of ``src`` and its translation ``tgt``: sorted (source index, target index) pairs.

    Every word of both sides takes part; "not" links to both ``ne`` and ``pas``, "does" to the verb.
    """
    out, links = _translate_aligned(src)
    if tgt.split() != out:
        raise ValueError(f"tgt: expected translate(src) = {' '.join(out)!r}, got {tgt!r}")
    return links


def _random_noun_phrase(rng: random.Random) -> list[str]:
    """Draw a random English noun phrase: determiner, 0-2 distinct adjectives, noun."""
    entry, number = rng.choice(NOUNS), "pl" if rng.random() < 0.35 else "sg"
    dets = [d for d, (required, *_) in DETERMINERS.items() if required in (None, number)]
    adjectives = rng.sample([a[0] for a in ADJECTIVES], k=rng.choices([0, 1, 2], weights=[4, 4.5, 1.5])[0])
    return [rng.choice(dets), *adjectives, entry[0] if number == "sg" else entry[1]]


def toy_translation_corpus(n_pairs: int, seed: int = 0) -> list[tuple[str, str]]:
    """Generate ``n_pairs`` distinct (English, Frenchy) sentence pairs of 3-11 words, deterministic from ``seed``.

    About 30% of the sentences are negated, 7 of the 11 verbs take an object; the vocabulary is ~75
    English words. Used in the translation chapters, where cross-attention maps show the reordering.
    """
    check_positive("n_pairs", n_pairs)
    rng = random.Random(seed)
    sentences: dict[str, None] = {}  # insertion-ordered set
    for _ in range(20 * n_pairs + 1000):  # the grammar holds millions of sentences, so this rarely loops long
        subject = _random_noun_phrase(rng)
        verb = rng.choice(VERBS)
        plural = subject[-1] in {n[1] for n in NOUNS}
        negated = rng.random() < 0.3
        verb_words = [("do" if plural else "does"), "not", verb[1]] if negated else [verb[1] if plural else verb[0]]
        obj = _random_noun_phrase(rng) if verb[4] else []
        sentences[" ".join(subject + verb_words + obj)] = None
        if len(sentences) == n_pairs:
            return [(s, translate(s)) for s in sentences]
    raise ValueError(f"n_pairs: expected at most the number of distinct sentences the sampler finds, got {n_pairs}")
