"""The assignment checks: every solution passes, every stub fails as "not implemented", and plausible wrong
implementations fail with the hint that names their mistake."""

import json
import math
import time
from collections import Counter
from pathlib import Path

import pytest
import torch
from record_replay import through_record_and_replay
from torch import nn

import transformer_lib as tl
from transformer_lib.classroom import checks
from transformer_lib.classroom.assignments import ASSIGNMENTS, notebook_namespace
from transformer_lib.classroom.checks import core

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def stubs():
    return {
        aid: notebook_namespace(ROOT / "book" / "assignments" / f"{aid}.ipynb", skip_tags=("check", "demo"))
        for aid in ASSIGNMENTS
    }


EXERCISES = [(aid, ex) for aid, a in ASSIGNMENTS.items() for ex in a.exercises]

# Tests that call no check (they test the result object or a helper): run once, live; a round trip would prove nothing.
CALLS_NO_CHECK = {
    "test_check_assignment_prints_a_summary_and_json_lines",  # check_assignment grades in process, by design
    "test_mistake_variants_with_no_mistake_are_the_reference",
    "test_the_decoding_model_exercises_early_and_late_endings",
    "test_the_beam_variant_without_a_mistake_is_the_reference",
    "test_the_encode_checks_constant_vocabulary_is_the_librarys",
}


def pytest_generate_tests(metafunc):
    """Every test here runs twice: ``live`` (the checks as a student's kernel runs them) and ``replayed`` (each check
    recorded and replayed from its JSON, as the grader runs it: tests/record_replay.py)."""
    routes = ["live"] if metafunc.function.__name__ in CALLS_NO_CHECK else ["live", "replayed"]
    metafunc.parametrize("check_route", routes, indirect=True)


@pytest.fixture(autouse=True)
def check_route(request, monkeypatch):
    if request.param == "live":
        yield
        return
    trips = through_record_and_replay(monkeypatch)
    yield
    assert trips, "no check went through record and replay: call checks.<name>, or list the test in CALLS_NO_CHECK"


def run(check_name, *objects, **kw):
    return getattr(checks, check_name)(*objects, **kw)


def assert_fails_with(result, *phrases):
    assert not result.passed, str(result)
    text = " ".join(result.hints) + " " + result.summary
    for phrase in phrases:
        assert phrase in text, f"{phrase!r} not in:\n{result}"


# --------------------------------------------------------------------------------------------------------------
# Solutions pass, stubs fail
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("aid, ex", EXERCISES, ids=[f"{a}-{e.name}" for a, e in EXERCISES])
def test_every_solution_passes(sol, aid, ex):
    result = checks.grade_exercise(ex.check, sol, ex.names)
    assert result.passed, str(result)
    assert str(result).startswith("=") and "PASS" in str(result).splitlines()[0]
    assert result.summary.startswith("All ")


@pytest.mark.parametrize("aid, ex", EXERCISES, ids=[f"{a}-{e.name}" for a, e in EXERCISES])
def test_every_stub_fails_as_not_implemented(stubs, aid, ex):
    result = checks.grade_exercise(ex.check, stubs[aid], ex.names)
    assert not result.passed
    assert result.not_implemented and result.error == "NotImplementedError"
    assert "not implemented yet" in result.summary
    assert "raise NotImplementedError" in result.hints[0]


# --------------------------------------------------------------------------------------------------------------
# The result object
# --------------------------------------------------------------------------------------------------------------
def test_result_block_hints_and_json(sol):
    result = checks.check_attention(lambda q, k, v, mask=None: sol["attention"](q * math.sqrt(q.shape[-1]), k, v, mask))
    text = str(result)
    assert text.splitlines()[0].strip("=").strip() == "FAIL: attention"
    assert "Input: no mask: q (2, 3, 8) float64" in text and "Expected weights[0, 0, :]" in text
    assert "Hint 1/2:" in text and ".more()" in text and repr(result) == text
    assert bool(result) is False
    assert result.more().startswith("Hint 2/2:") and "math.sqrt" in result.more()  # stays on the last level
    assert result.hint(1) == "Hint 1/2: " + result.hints[0] and result.hint(9) == result.hint(2)
    with pytest.raises(ValueError, match="level"):
        result.hint(0)
    back = checks.CheckResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result and back.message.startswith("The weights differ from the reference. Hint: The scores")


def test_passing_result_has_no_hint(sol):
    result = checks.check_causal_mask(sol["make_causal_mask"])
    assert result.passed and bool(result) and "FAIL" not in str(result)
    assert result.hint() == "No hint: this check passed." and result.message == result.summary


def test_missing_name_and_unknown_check_and_crashing_object():
    r = checks.grade_exercise("check_attention", {}, ["attention"])
    assert not r.passed and r.summary == "attention is not defined." and "SyntaxError" in r.hints[0]
    r = checks.grade_exercise("check_nothing", {}, [])
    assert not r.passed and "Unknown check" in r.summary
    r = checks.grade_exercise("check_multi_head_attention", {"MultiHead": 42}, ["MultiHead"])
    assert not r.passed and r.error == "TypeError"  # calling an int: reported as the learner's error


def test_check_assignment_prints_a_summary_and_json_lines(sol, capsys):
    results = checks.check_assignment("04_masks", sol)
    out = capsys.readouterr().out
    names = [ex.name for ex in ASSIGNMENTS["04_masks"].exercises]  # the registry's list, in its order
    assert [r.passed for r in results] == [True] * len(names) and [r.exercise for r in results] == names
    n = len(names)
    assert out.splitlines()[0] == f"04_masks: {n}/{n} exercises pass" and "PASS  causal_mask" in out
    checks.check_assignment("04_masks", {}, emit_json=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == n and all(line.startswith(checks.RESULT_MARKER) for line in lines)
    parsed = [json.loads(line[len(checks.RESULT_MARKER) :]) for line in lines]
    assert [p["exercise"] for p in parsed] == names
    assert not any(p["passed"] for p in parsed)


def test_checks_leave_the_learners_random_state_alone(sol):
    state = torch.get_rng_state()
    checks.check_multi_head_attention(sol["MultiHead"])
    checks.check_decoder_layer(sol["DecoderBlock"])
    assert torch.equal(torch.get_rng_state(), state)


def test_an_endless_loop_is_stopped_by_the_time_limit():
    def positional_encoding(max_len, d_model):
        while True:
            pass

    result = checks.check_positional_encoding(positional_encoding, time_limit=0.3)
    assert_fails_with(result, "did not finish within 0.3 s of CPU time", "loop that never ends")
    assert result.error == "TimeoutError"


def test_the_time_limit_is_cpu_time_so_a_slow_clock_fails_no_one(sol):
    """Each call waits 0.5 s on the clock but computes for milliseconds, and passes a 0.2 s limit: the limit is CPU
    time, which a busy machine does not stretch (a wall-clock limit of 0.2 s would fail every call)."""

    def positional_encoding(max_len, d_model):
        time.sleep(0.5)
        return sol["positional_encoding"](max_len, d_model)

    result = checks.check_positional_encoding(positional_encoding, time_limit=0.2)
    assert result.passed, str(result)


def test_a_call_that_waits_forever_is_stopped_by_the_wall_clock_backstop(monkeypatch):
    monkeypatch.setattr(core, "WALL_LIMIT_FACTOR", 5)  # 0.1 s of CPU, 0.5 s on the clock

    def positional_encoding(max_len, d_model):
        time.sleep(3600)

    started = time.monotonic()
    result = checks.check_positional_encoding(positional_encoding, time_limit=0.1)
    assert_fails_with(result, "within 0.5 s of wall-clock time", "CPU time limit is 0.1 s", "wait for something")
    assert result.error == "TimeoutError"
    assert time.monotonic() - started < 3000, "the hour-long sleep was not cut off"


@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")
def test_an_exception_names_the_input_and_the_line():
    def attention(q, k, v, mask=None):
        scores = q @ k.T
        return scores, scores

    result = checks.check_attention(attention)
    assert_fails_with(result, "attention raised RuntimeError", "k.transpose(-2, -1)")
    assert "Input: no mask" in result.details and "scores = q @ k.T" in result.details


# --------------------------------------------------------------------------------------------------------------
# The catalogue of mistakes is built on the right answer
# --------------------------------------------------------------------------------------------------------------
def test_mistake_variants_with_no_mistake_are_the_reference(sol):
    for _, c in checks.attention._attention_cases()[:4]:
        want_out, want_w = tl.scaled_dot_product_attention(c["q"], c["k"], c["v"], c["mask"], need_weights=True)
        got = checks.attention._attention_variant(c["q"], c["k"], c["v"], c["mask"])
        assert torch.allclose(got["output"], want_out, atol=1e-12) and torch.allclose(got["weights"], want_w)
    m = sol["MultiHead"](16, 4).double()
    x, mask = torch.randn(2, 3, 16, dtype=torch.float64), tl.causal_mask(3)
    out, w = m(x, x, x, mask)
    got = checks.multi_head._mha_variant(m, x, x, x, mask, 4)
    assert torch.allclose(got["output"], out, atol=1e-12) and torch.allclose(got["weights"], w, atol=1e-12)
    assert torch.allclose(checks.positions._pe_variant(7, 10), tl.sinusoidal_encoding(7, 10, dtype=torch.float64))
    model = checks.tiny_translator()
    src = checks.decoding._SRC
    assert torch.equal(checks.decoding._greedy_variant(model, src, 8)["tokens"], tl.greedy_decode(model, src, 8, 1, 2))


def test_the_decoding_model_exercises_early_and_late_endings():
    model = checks.tiny_translator()
    out = tl.greedy_decode(model, checks.decoding._SRC, 8, 1, 2)
    ended = (out == 2).any(1)
    assert ended.any() and not ended.all()  # some rows end early, one runs to the limit
    assert (out[:, 1:] != 0).sum(1).unique().numel() > 2  # the rows end at different steps
    assert (out[:, 1:] != 1).all()  # <bos> is never generated, so a wrong loop cannot pass by accident
    best = tl.beam_search(
        checks.tiny_translator(seed=0, eos_bias=1.5),
        checks.decoding._SRC[0:1],
        8,
        1,
        2,
        beam_size=3,
        length_penalty=0.0,
    )[0][0].tokens
    greedy = tl.greedy_decode(checks.tiny_translator(seed=0, eos_bias=1.5), checks.decoding._SRC[0:1], 8, 1, 2)[0]
    assert best.tolist() != greedy.tolist()  # so the beam check can tell beam search from greedy decoding


# --------------------------------------------------------------------------------------------------------------
# Wrong implementations fail with their hint
# --------------------------------------------------------------------------------------------------------------
def _specials_missing(texts, min_freq=1):
    counts = Counter(w for t in texts for w in t.split())
    return {w: i for i, w in enumerate(sorted(counts, key=lambda w: (-counts[w], w)))}


def _alphabetical(texts, min_freq=1):
    counts = Counter(w for t in texts for w in t.split())
    words = sorted(w for w in counts if counts[w] >= min_freq)
    return {t: i for i, t in enumerate(["<pad>", "<bos>", "<eos>", "<unk>"] + words)}


def _most_common(texts, min_freq=1):
    counts = Counter(w for t in texts for w in t.split())
    words = [w for w, n in counts.most_common() if n >= min_freq]
    return {t: i for i, t in enumerate(["<pad>", "<bos>", "<eos>", "<unk>"] + words)}


def _sorted_all(texts, min_freq=1):  # ignores min_freq
    counts = Counter(w for t in texts for w in t.split())
    words = sorted(counts, key=lambda w: (-counts[w], w))
    return {t: i for i, t in enumerate(["<pad>", "<bos>", "<eos>", "<unk>"] + words)}


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (_specials_missing, ["special tokens come first", "<pad> 0"]),
        (_alphabetical, ["alphabetical order", "most frequent first"]),
        (_most_common, ["break ties alphabetically"]),
        (_sorted_all, ["fewer than min_freq=2"]),
        (lambda texts, min_freq=1: list(_sorted_all(texts)), ["returned a list"]),
    ],
)
def test_wrong_vocabularies(fn, phrases):
    assert_fails_with(checks.check_build_vocab(fn), *phrases)


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda text, vocab, add_special_tokens=True: [vocab[w] for w in text.split()], ["<bos> (id 1) and <eos>"]),
        (lambda text, vocab, add_special_tokens=True: [1, *[vocab[w] for w in text.split()], 2], ["KeyError", "<unk>"]),
        (
            lambda text, vocab, add_special_tokens=True: [1, *[vocab.get(w, 3) for w in text.split()], 2],
            ["add_special_tokens=False"],
        ),
        (
            lambda text, vocab, add_special_tokens=True: (
                [1, *[vocab.get(w, 0) for w in text.split()], 2]
                if add_special_tokens
                else [vocab.get(w, 0) for w in text.split()]
            ),
            ["<unk> (id 3)"],
        ),
    ],
)
def test_wrong_encoders(fn, phrases):
    assert_fails_with(checks.check_encode(fn), *phrases)


def _pad(seqs, pad_id=0, left=False, fill=None, dtype=torch.long):
    T = max(len(s) for s in seqs)
    fill = pad_id if fill is None else fill
    rows = [[fill] * (T - len(s)) + s if left else s + [fill] * (T - len(s)) for s in seqs]
    return torch.tensor(rows, dtype=dtype)


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda seqs, pad_id=0: _pad(seqs, pad_id, left=True), ["Pad on the right"]),
        (lambda seqs, pad_id=0: _pad(seqs, pad_id, fill=0), ["pad_id argument"]),
        (lambda seqs, pad_id=0: _pad(seqs, pad_id, dtype=torch.float32), ["torch.long"]),
        (lambda seqs, pad_id=0: _pad(seqs, pad_id).T, ["transposed"]),
        (lambda seqs, pad_id=0: _pad(seqs, pad_id).tolist(), ["expected a torch.Tensor"]),
    ],
)
def test_wrong_padding(fn, phrases):
    assert_fails_with(checks.check_pad_sequences(fn), *phrases)


def _pe(max_len, d_model, **kw):
    return checks.positions._pe_variant(max_len, d_model, **kw).float()


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda n, d: _pe(n, d, swap=True), ["sin and cos are swapped"]),
        (lambda n, d: tl.sinusoidal_encoding(n, d, interleaved=False), ["interleaves"]),
        (lambda n, d: _pe(n, d, exponent="column"), ["share one frequency"]),
        (lambda n, d: _pe(n, d, exponent="double"), ["exponent is doubled"]),
        (lambda n, d: _pe(n, d, exponent="half"), ["exponent is halved"]),
        (lambda n, d: _pe(n, d, start=1), ["Positions start at 0"]),
        (lambda n, d: _pe(n, d).T.contiguous(), ["transposed"]),
        (lambda n, d: _pe(n, d).numpy(), ["expected a torch.Tensor"]),
        (lambda n, d: torch.zeros(n, d, dtype=torch.long), ["floating point"]),
        (lambda n, d: _pe(n, d) * 1.5, ["PE[pos, 2i] = sin"]),
    ],
)
def test_wrong_positional_encodings(fn, phrases):
    assert_fails_with(checks.check_positional_encoding(fn), *phrases)


def _attn(scale=None, dim=-1, mask_mode="keep", d_from=None, out_dtype=None, weights_only=False, late_fill=None):
    def attention(q, k, v, mask=None):
        d = q.shape[-1] if d_from is None else d_from(q, k)
        s = 1 / math.sqrt(d) if scale is None else scale(d)
        scores = q @ k.transpose(-2, -1) * s
        if mask is not None and mask_mode == "keep":
            scores = scores.masked_fill(~mask, float("-inf"))
        elif mask is not None and mask_mode == "invert":
            scores = scores.masked_fill(mask, float("-inf"))
        elif mask is not None and mask_mode == "zero":
            scores = scores.masked_fill(~mask, 0.0)
        w = scores.softmax(dim)
        if mask is not None and late_fill is not None:  # the mask applied after the softmax
            w = w.masked_fill(~mask, late_fill)
        out = w @ v
        if out_dtype is not None:
            out = out.to(out_dtype)
        return w if weights_only else (out, w)

    return attention


def _masked_late_and_renormalised(q, k, v, mask=None):
    w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:  # zeroed after the softmax, then renormalised with an epsilon: rows sum to < 1
        w = w * mask
        w = w / (w.sum(-1, keepdim=True) + 1e-3)
    return w @ v, w


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (_attn(scale=lambda d: 1.0), ["√d_k too large", "did you divide q·kᵀ by √d_k?"]),
        (_attn(scale=lambda d: 1 / d), ["You divided by d_k"]),
        (_attn(scale=lambda d: math.sqrt(d)), ["You multiplied by √d_k"]),
        (_attn(d_from=lambda q, k: k.shape[-2]), ["not the number of keys"]),
        (_attn(dim=-2), ["Rows do not sum to 1: did you take the softmax over the last axis?"]),
        (_attn(mask_mode="invert"), ["The mask looks inverted: True means may attend"]),
        (_attn(mask_mode="ignore"), ["The mask has no effect"]),
        (_attn(mask_mode="zero"), ["exp(0) = 1"]),
        (_attn(out_dtype=torch.float32), ["dtype"]),
        (_attn(weights_only=True), ["must return a pair (output, weights)"]),
        (_attn(mask_mode="ignore", late_fill=0.0), ["The mask is applied after the softmax", "before the softmax"]),
        (_attn(mask_mode="ignore", late_fill=float("-inf")), ["The mask is applied after the softmax"]),
        (_masked_late_and_renormalised, ["The mask is applied after the softmax"]),  # no variant: by its symptoms
        (
            lambda q, k, v, mask=None: (_attn()(q, k, v, mask)[1] @ v * 2, _attn()(q, k, v, mask)[1]),
            ["The weights are right but the output is not", "The output differs from the reference."],
        ),
        (_attn(scale=lambda d: (1 + 1e-4) / math.sqrt(d)), ["The weights differ from the reference."]),
        (
            lambda q, k, v, mask=None: ((q @ k.transpose(-2, -1)).exp() @ v, (q @ k.transpose(-2, -1)).exp()),
            ["Rows do not sum to 1"],
        ),
        (lambda q, k, v, mask=None: _attn()(q, k, v, mask)[::-1], ["shape"]),
    ],
)
def test_wrong_attention(fn, phrases):
    assert_fails_with(checks.check_attention(fn), *phrases)


@pytest.mark.parametrize(
    "fn, failed",
    [
        (_attn(), set()),
        (_attn(scale=lambda d: 1.0), {"scaling"}),  # no ÷√d_k: the softmax and the mask are still right
        (_attn(scale=lambda d: 1 / d), {"scaling"}),
        (_attn(mask_mode="invert"), {"masking"}),
        (_attn(mask_mode="ignore"), {"masking"}),
        (_attn(mask_mode="zero"), {"masking"}),
        (_attn(mask_mode="ignore", late_fill=0.0), {"masking"}),
        (
            lambda q, k, v, mask=None: (_attn()(q, k, v, mask)[1] @ v * 2, _attn()(q, k, v, mask)[1]),
            {"returned weights"},
        ),
        (_attn(dim=-2), {"scaling", "softmax rows", "masking", "returned weights"}),
        (_attn(weights_only=True), {"scaling", "softmax rows", "masking", "returned weights"}),
        (
            lambda q, k, v, mask=None: (v[..., :1, :].expand(*q.shape[:-1], v.shape[-1]), None),
            {"scaling", "softmax rows", "masking", "returned weights"},
        ),
    ],
)
def test_attention_earns_partial_credit_per_part(fn, failed):
    """Assignment 3's points are split over the four parts of its check that the registry names; each wrong
    implementation loses exactly the points of the parts it gets wrong, and still gets the hint that names its
    mistake."""
    exercise = ASSIGNMENTS["03_attention"].exercise("attention")
    result = checks.check_attention(fn)
    assert (
        set(result.parts)
        == {part for part, _ in exercise.parts}
        == {"scaling", "softmax rows", "masking", "returned weights"}
    )
    assert {p for p, ok in result.parts.items() if not ok} == failed, result.parts
    kept = sum(p for part, p in exercise.parts if part not in failed)  # the registry's points of the parts passed
    assert result.passed == (not failed) and exercise.earned(result) == kept


def test_partial_credit_needs_parts_that_add_up():
    from transformer_lib.classroom.registry import Exercise

    with pytest.raises(ValueError, match=r"parts: expected \(name, points > 0\) pairs whose points add up to 10"):
        Exercise(("f",), "check_f", points=10, parts=(("a", 3), ("b", 3)))
    stub = checks.check_attention(lambda q, k, v, mask=None: (_ for _ in ()).throw(NotImplementedError()))
    assert stub.not_implemented and not any(stub.parts.values())  # a stub earns nothing
    assert ASSIGNMENTS["03_attention"].exercise("attention").earned(stub) == 0


def test_a_float32_square_root_is_not_a_mistake():
    def attention(q, k, v, mask=None):  # √d_k as a float32 tensor: off by ~1e-8 from math.sqrt in float64
        scores = q @ k.transpose(-2, -1) / torch.sqrt(torch.tensor(q.shape[-1], dtype=torch.float32))
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        w = scores.softmax(-1)
        return w @ v, w

    assert checks.check_attention(attention).passed


def test_a_small_real_difference_shows_in_the_printed_rows():
    result = checks.check_attention(_attn(scale=lambda d: (1 + 1e-4) / math.sqrt(d)))  # 1e-4 too much scale
    expected, got, largest = result.details.splitlines()[1:4]
    assert expected.split("=")[1] != got.split("=")[1], result.details  # 4 decimals would print them the same
    assert largest.startswith("Largest difference") and "allowed: 1e-06 + 1e-05 x |expected|" in largest


def test_bfloat16_tolerance_accepts_a_different_order_of_operations():
    def attention(q, k, v, mask=None):  # scales q before the product: same maths, other rounding
        w = q / math.sqrt(q.shape[-1]) @ k.transpose(-2, -1)
        if mask is not None:
            w = w.masked_fill(~mask, float("-inf"))
        w = w.softmax(-1)
        return w @ v, w

    assert checks.check_attention(attention).passed


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda ids, pad_id=0: (ids == pad_id)[:, None, None, :], ["looks inverted", "ids != pad_id"]),
        (lambda ids, pad_id=0: ids != pad_id, ["(B, 1, 1, S)", "Yours is (B, S)"]),
        (lambda ids, pad_id=0: (ids != pad_id)[:, None, None, :].float(), ["boolean"]),
        (lambda ids, pad_id=0: (ids != 0)[:, None, None, :], ["pad_id argument"]),
    ],
)
def test_wrong_padding_masks(fn, phrases):
    assert_fails_with(checks.check_padding_mask(fn), *phrases)


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda n: torch.ones(n, n, dtype=torch.bool).triu(1), ["True where attention is blocked", "~mask"]),
        (lambda n: ~torch.ones(n, n, dtype=torch.bool).tril(), ["True where attention is blocked", "triu(diagonal=1)"]),
        (lambda n: torch.ones(n, n, dtype=torch.bool).triu(), ["the positions after it", ".tril()"]),
        (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1), ["causal mask is off by one", "keep the diagonal"]),
        (lambda n: torch.ones(n, n, dtype=torch.bool).tril(1), ["causal mask is off by one", "one future token"]),
        (lambda n: torch.ones(n, n).tril(), ["boolean"]),
    ],
)
def test_wrong_causal_masks(fn, phrases):
    result = checks.check_causal_mask(fn)
    assert_fails_with(result, *phrases)
    assert "inverted" not in str(result) + " ".join(result.hints)  # a triu mask is a "blocked" mask or the future


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda ids, pad_id=0: tl.causal_mask(ids.shape[1]) | tl.padding_mask(ids, pad_id), ["AND (&)"]),
        (
            lambda ids, pad_id=0: tl.causal_mask(ids.shape[1]).expand(ids.shape[0], 1, -1, -1),
            ["padding part is missing"],
        ),
        (
            lambda ids, pad_id=0: tl.padding_mask(ids, pad_id).expand(-1, -1, ids.shape[1], -1),
            ["causal part is missing"],
        ),
        (
            lambda ids, pad_id=0: tl.causal_mask(ids.shape[1]) & tl.padding_mask(ids, pad_id).transpose(-1, -2),
            ["pad *keys*"],
        ),
        (lambda ids, pad_id=0: (tl.causal_mask(ids.shape[1]) & tl.padding_mask(ids, pad_id))[:, 0], ["(B, 1, T, T)"]),
    ],
)
def test_wrong_decoder_masks(fn, phrases):
    assert_fails_with(checks.check_decoder_mask(fn), *phrases)


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda x, h: x.view(x.shape[0], h, x.shape[1], -1), ["split wrongly"]),
        (lambda x, h: x.view(x.shape[0], x.shape[1], h, -1), ["transpose(1, 2)"]),
    ],
)
def test_wrong_split_heads(fn, phrases):
    assert_fails_with(checks.check_split_heads(fn), *phrases)


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (lambda x: x.reshape(x.shape[0], x.shape[2], -1), ["merged in the wrong order"]),
        (lambda x: x, ["not merged back"]),
    ],
)
def test_wrong_merge_heads(fn, phrases):
    assert_fails_with(checks.check_merge_heads(fn), *phrases)


def _mha_subclass(sol, forward):
    return type("MultiHead", (sol["MultiHead"],), {"forward": forward})


def _heads(sol, m, x, *, transpose=True):
    B, L, C = x.shape
    return sol["split_heads"](x, m.n_heads) if transpose else x.view(B, m.n_heads, L, C // m.n_heads)


def _forward(
    sol,
    *,
    w_o=True,
    merge=True,
    merge_transpose=True,
    split_transpose=True,
    scale=None,
    use_mask=True,
    kv_from_query=False,
    average=False,
):
    def forward(self, query, key, value, mask=None):
        if kv_from_query:
            key = value = query
        q, k, v = (
            _heads(sol, self, w(x), transpose=split_transpose)
            for w, x in ((self.w_q, query), (self.w_k, key), (self.w_v, value))
        )
        s = None if scale is None else scale(q.shape[-1] * self.n_heads)
        out, weights = checks.attention._attention_variant(q, k, v, mask if use_mask else None, scale=s).values()
        out, weights = out.to(query.dtype), weights.to(query.dtype)
        if not merge:
            return out, weights
        B, H, T, D = out.shape
        merged = sol["merge_heads"](out) if merge_transpose else out.reshape(B, T, H * D)
        return (self.w_o(merged) if w_o else merged), (weights.mean(1) if average else weights)

    return forward


@pytest.mark.parametrize(
    "kw, phrases",
    [
        (dict(merge=False), ["Heads were not merged back"]),
        (dict(w_o=False), ["Missing W^O"]),
        (dict(merge_transpose=False), ["merged in the wrong order"]),
        (dict(split_transpose=False), ["split wrongly"]),
        (dict(scale=lambda c: 1.0), ["√d_k too large"]),
        (dict(scale=lambda c: 1 / math.sqrt(c)), ["not √d_model"]),
        (dict(use_mask=False), ["The mask has no effect"]),
        (dict(kv_from_query=True), ["key and value arguments"]),
        (dict(average=True), ["not an average over heads"]),
    ],
)
def test_wrong_multi_head_attention(sol, kw, phrases):
    assert_fails_with(checks.check_multi_head_attention(_mha_subclass(sol, _forward(sol, **kw))), *phrases)


def test_multi_head_attention_without_the_starter_attributes(sol):
    class Renamed(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.q = nn.Linear(d_model, d_model)

    assert_fails_with(checks.check_multi_head_attention(Renamed), "w_q", "Keep the __init__")


def _decoder(
    sol,
    *,
    pre_ln=False,
    residual=True,
    self_mask_used=True,
    cross_kv="memory",
    cross_mask_used=True,
    one_norm=False,
    as_tuple=False,
):
    def forward(self, y, memory, self_mask=None, cross_mask=None):
        norms = [self.norm1] * 3 if one_norm else [self.norm1, self.norm2, self.norm3]

        def sub(x, f, norm):
            if pre_ln:
                return x + f(norm(x))
            return norm(x + f(x)) if residual else norm(f(x))

        y = sub(y, lambda x: self.self_attn(x, x, x, self_mask if self_mask_used else None)[0], norms[0])
        y = sub(
            y,
            lambda x: self.cross_attn(
                x,
                memory if cross_kv == "memory" else x,
                memory if cross_kv == "memory" else x,
                cross_mask if cross_mask_used else None,
            )[0],
            norms[1],
        )
        y = sub(y, self.ff, norms[2])
        return (y, None) if as_tuple else y

    return type("DecoderBlock", (sol["DecoderBlock"],), {"forward": forward})


@pytest.mark.parametrize(
    "kw, phrases",
    [
        (dict(pre_ln=True), ["pre-LN", "post-LN"]),
        (dict(residual=False), ["residual connection is missing"]),
        (dict(self_mask_used=False), ["Future tokens leak"]),
        (dict(cross_kv="y"), ["memory (the encoder output)"]),
        (dict(cross_mask_used=False), ["Pass cross_mask"]),
        (dict(one_norm=True), ["its own LayerNorm"]),
        (dict(as_tuple=True), ["returned a tuple"]),
    ],
)
def test_wrong_decoder_layers(sol, kw, phrases):
    assert_fails_with(checks.check_decoder_layer(_decoder(sol, **kw)), *phrases)


def _greedy(position=-1, stop=True, pad_after=True, keep_bos=True, extra_steps=0):
    def decode_greedy(model, src, max_new_tokens, bos_id, eos_id):
        memory = model.encode(src)
        tokens = torch.full((src.shape[0], 1), bos_id)
        finished = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_new_tokens + extra_steps):
            nxt = model.lm_head(model.decode(tokens, memory, src=src)[:, position]).argmax(-1)
            if pad_after:
                nxt = nxt.masked_fill(finished, model.config.pad_id)
            tokens = torch.cat([tokens, nxt[:, None]], 1)
            finished |= nxt == eos_id
            if stop and finished.all():
                break
        return tokens if keep_bos else tokens[:, 1:]

    return decode_greedy


def _greedy_forever(model, src, max_new_tokens, bos_id, eos_id):
    tokens = torch.full((src.shape[0], 1), bos_id)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    while not finished.all():  # the new token is never appended, and a row that does not end loops forever
        finished |= model(src, tokens)[:, -1].argmax(-1) == eos_id
    return tokens


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (_greedy(position=0), ["first position", "h[:, -1]"]),
        (_greedy(stop=False), ["Stop as soon as every row has produced <eos>"]),
        (_greedy(pad_after=False), ["only get <pad>"]),
        (_greedy(keep_bos=False), ["Keep <bos>"]),
        (_greedy(extra_steps=-1), ["off by one"]),
        (_greedy(extra_steps=1), ["off by one"]),
    ],
)
def test_wrong_greedy_decoding(fn, phrases):
    assert_fails_with(checks.check_greedy_decode(fn), *phrases)


def test_greedy_decoding_that_never_stops_is_cut_off():
    assert_fails_with(checks.check_greedy_decode(_greedy_forever, time_limit=1.0), "did not finish within 1 s")


def test_wrong_beam_search(sol):
    def always_greedy(model, src, max_new_tokens, bos_id, eos_id, beam_size=4):
        return sol["decode_greedy"](model, src, max_new_tokens, bos_id, eos_id)[0].tolist()

    def no_bos(model, src, max_new_tokens, bos_id, eos_id, beam_size=4):
        return sol["decode_beam"](model, src, max_new_tokens, bos_id, eos_id, beam_size)[1:]

    def per_beam_best(model, src, max_new_tokens, bos_id, eos_id, beam_size=4):  # k=1 works, wider beams do not
        if beam_size == 1:
            return always_greedy(model, src, max_new_tokens, bos_id, eos_id)
        return sol["decode_beam"](model, src, max_new_tokens, bos_id, eos_id, 1)

    assert_fails_with(checks.check_beam_search(always_greedy), "what greedy decoding returns")
    assert_fails_with(checks.check_beam_search(no_bos), "start with <bos>")
    assert_fails_with(checks.check_beam_search(per_beam_best), "what greedy decoding returns")


def test_the_example_on_the_assignments_page_is_what_the_check_prints():
    def attention(q, k, v, mask=None):  # forgets ÷√d_k
        w = (q @ k.transpose(-2, -1)).softmax(-1)
        return w @ v, w

    page = (ROOT / "book" / "assignments" / "index.md").read_text(encoding="utf-8")
    example = page.split("```text\n", 1)[1].split("```", 1)[0]
    assert example.rstrip("\n") == str(checks.check_attention(attention))


def _beam(
    probabilities=False,
    copies=False,
    on_eos="set aside",
    stop_at_first=False,
    best_beam=False,
    penalty=True,
    one_beam_too_few=False,
):
    """decode_beam as a learner might write it, with at most one classic mistake."""

    def decode_beam(model, src, max_new_tokens, bos_id, eos_id, beam_size=4, length_penalty=0.0):
        memory = model.encode(src)
        beam_size = max(beam_size - 1, 1) if one_beam_too_few else beam_size
        beams = [([bos_id], 0.0)] * (beam_size if copies else 1)
        finished = []
        for _ in range(max_new_tokens):
            tokens = torch.tensor([seq for seq, _ in beams])
            h = model.decode(tokens, memory.expand(len(beams), -1, -1), src=src.expand(len(beams), -1))
            log_probs = model.lm_head(h[:, -1]).log_softmax(-1)
            step = log_probs.exp() if probabilities else log_probs
            candidates = sorted(
                (
                    (score + x, seq + [t])
                    for (seq, score), row in zip(beams, step.tolist(), strict=True)
                    for t, x in enumerate(row)
                ),
                reverse=True,
            )
            beams = []
            for score, seq in candidates:
                if seq[-1] == eos_id and on_eos != "extend":
                    if on_eos == "set aside":
                        n = len(seq) - 1
                        finished.append((seq, score / ((5 + n) / 6) ** (length_penalty if penalty else 0.0)))
                else:
                    beams.append((seq, score))
                    if len(beams) == beam_size:
                        break
            if len(finished) >= (1 if stop_at_first else beam_size) or not beams:
                break
        return max(beams if best_beam or not finished else finished, key=lambda b: b[1])[0]

    return decode_beam


def test_the_learner_style_beam_search_without_a_mistake_passes():
    assert checks.check_beam_search(_beam()).passed


@pytest.mark.parametrize(
    "fn, phrases",
    [
        (_beam(probabilities=True), ["You add probabilities", "log-probabilities"]),
        (_beam(copies=True), ["what greedy decoding returns", "Start from a single beam [bos_id]", "tie"]),
        (_beam(one_beam_too_few=True), ["what greedy decoding returns", "fewer than beam_size different beams"]),
        (_beam(on_eos="drop"), ["Candidates that end with <eos> are thrown away"]),
        (_beam(on_eos="extend"), ["goes on after <eos>", "do not extend it"]),
        (_beam(best_beam=True), ["You return the best live beam although hypotheses have finished"]),
        (_beam(penalty=False), ["The length penalty is missing"]),
        (_beam(stop_at_first=True), ["You stop at the first finished hypothesis"]),
    ],
    ids=[
        "summed probabilities",
        "beams start as copies",
        "one beam too few",
        "finished dropped",
        "finished extended",
        "best live beam returned",
        "no length penalty",
        "stops at the first finished",
    ],
)
def test_classic_beam_search_mistakes(fn, phrases):
    assert_fails_with(checks.check_beam_search(fn), *phrases)


def test_the_beam_variant_without_a_mistake_is_the_reference():
    for seed, bias, row, k, alpha in [(0, 1.5, 0, 3, 0.0), (1, 1.0, 4, 3, 0.6), (1, 2.0, 1, 4, 0.0)]:
        model, src = checks.tiny_translator(seed=seed, eos_bias=bias), checks.decoding._SRC[row : row + 1]
        want = tl.beam_search(model, src, 8, 1, 2, beam_size=k, length_penalty=alpha)[0][0].tokens.tolist()
        assert checks.decoding._beam_variant(model, src, 8, k, alpha) == want


def test_the_encode_checks_constant_vocabulary_is_the_librarys():
    """check_encode hands encode a constant vocabulary (its inputs need no reference in the kernel): it must be the
    one the library builds from the check's corpus."""
    from transformer_lib.classroom.checks import tokenizer

    assert tokenizer._CORPUS_VOCAB == tokenizer._reference_vocab(tokenizer._CORPUS)
