"""Record and replay (transformer_lib.classroom.checks.record): a recording that does not fit the check, or is not
data, fails; values and modules come back exactly. That a check replayed in the grader from the kernel's recording
gives the result the live check gives is tested by tests/test_checks.py, which runs each of its tests both ways
(through tests/record_replay.py)."""

import json
import math

import pytest
import torch
from record_replay import LIVE, roundtrip

from transformer_lib.classroom import checks
from transformer_lib.classroom.assignments import ASSIGNMENTS
from transformer_lib.classroom.checks import record, snapshot


def test_every_check_is_replayed_by_some_exercise():
    """tests/test_checks.py runs every exercise's solution through record and replay (its ``replayed`` route), so
    every check is replayed there at least once with a pass; its wrong implementations give the failures."""
    used = {exercise.check for assignment in ASSIGNMENTS.values() for exercise in assignment.exercises}
    assert set(LIVE) <= used, f"checks no exercise uses, never replayed: {sorted(set(LIVE) - used)}"


# --------------------------------------------------------------------------------------------------------------
# What a kernel could print instead of an honest recording
# --------------------------------------------------------------------------------------------------------------
def _recording(sol):
    return record.record_exercise("check_causal_mask", sol, ["make_causal_mask"], 5.0)


def _replay(text):
    return record.replay_exercise("check_causal_mask", ["make_causal_mask"], text, 5.0)


def test_an_honest_recording_replays_to_a_pass_and_carries_no_verdict(sol):
    text = _recording(sol)
    assert _replay(text).passed
    assert "passed" not in text and "All " not in text  # outputs only: the verdict is the grader's


def test_changed_outputs_fail_on_their_numbers(sol):
    data = json.loads(_recording(sol))
    tensor = snapshot._Decoder().tensor(data["calls"][-1]["value"])
    data["calls"][-1]["value"] = snapshot._encode(~tensor)  # every entry of the last mask inverted
    result = _replay(json.dumps(data))
    assert not result.passed and result.summary != "The recorded calls do not match the check."
    assert "Expected" in result.details


def test_calls_that_do_not_fit_the_check_fail_with_a_clear_message(sol):
    data = json.loads(_recording(sol))
    cases = {
        "other arguments": [dict(data["calls"][0], fp="0" * 32)] + data["calls"][1:],
        "one call missing": data["calls"][:-1],
        "one call too many": data["calls"] + data["calls"][-1:],
    }
    for label, calls in cases.items():
        result = _replay(json.dumps(dict(data, calls=calls)))
        assert not result.passed and result.summary == "The recorded calls do not match the check.", label
        assert result.error == "RecordingMismatch"


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda d: "{not json", "not valid JSON"),
        (lambda d: json.dumps({"exercise": "causal_mask", "passed": True, "summary": "All fine."}), "format"),
        (lambda d: json.dumps(d)[:-1] + ', "x": NaN}', "NaN"),
        (lambda d: json.dumps(dict(d, check="check_attention")), "another check"),
        (
            lambda d: json.dumps(
                dict(
                    d,
                    calls=[
                        dict(d["calls"][0], value={"t": "tensor", "dtype": "float64", "shape": [1000], "data": "AAAA"})
                    ],
                )
            ),
            "does not fit its shape",
        ),
        (lambda d: json.dumps(dict(d, calls=[dict(d["calls"][0], value={"t": "pickle", "v": "gASV"})])), "unknown"),
        (lambda d: json.dumps(dict(d, calls=[dict(d["calls"][0], value=[[[[1]]]])])), "unexpected value"),
        (lambda d: " " * (record.MAX_RECORDING_CHARS + 1), "at most"),
    ],
)
def test_a_recording_that_is_not_data_is_rejected(sol, change, why):
    data = json.loads(_recording(sol))
    with pytest.raises(record.RecordingError, match=why):
        _replay(change(data))


def test_a_function_that_changes_its_inputs_in_place_replays_alike(sol):
    def attention(q, k, v, mask=None):  # sloppy but correct: scales q in place
        q.div_(math.sqrt(q.shape[-1]))
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(-1)
        return weights @ v, weights

    result = roundtrip("check_attention", {"attention": attention}, ["attention"])
    assert result.passed, str(result)


def test_a_huge_output_is_not_recorded():
    value = snapshot._Decoder().value(json.loads(json.dumps(snapshot._encode(torch.zeros(record.MAX_RECORDING_CHARS)))))
    assert not isinstance(value, torch.Tensor) and type(value).__name__.startswith("Tensor[torch.float32")


def test_values_round_trip_exactly():
    g = torch.Generator().manual_seed(0)
    values = [
        None,
        True,
        3,
        -(2**70),
        0.1,
        float("nan"),
        float("-inf"),
        "ünï",
        [1, (2.5, "x")],
        {"a": 1, 2: None},
        torch.randn(2, 3, generator=g).bfloat16(),
        torch.randn(2, generator=g, dtype=torch.float64),
        torch.tensor([[True, False]]),
        torch.arange(6).view(2, 3).t(),
        torch.empty(0, 4),
    ]
    back = snapshot._Decoder().value(json.loads(json.dumps(snapshot._encode(values))))
    for a, b in zip(values, back, strict=True):
        if isinstance(a, torch.Tensor):
            bits = (lambda t: t.reshape(-1).view(torch.int16)) if a.dtype == torch.bfloat16 else (lambda t: t)
            assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a), bits(b))  # bit for bit
        elif isinstance(a, float) and math.isnan(a):
            assert math.isnan(b)
        else:
            assert a == b and type(a) is type(b)
    import numpy as np

    opaque = snapshot._Decoder().value(json.loads(json.dumps(snapshot._encode(np.zeros(3)))))
    assert type(opaque).__name__ == "ndarray" and not isinstance(opaque, (torch.Tensor, list))


def test_a_module_comes_back_as_a_shadow_of_the_classes_the_check_names_only(sol):
    import transformer_lib as tl

    block = sol["DecoderBlock"](16, 4, 32, dropout=0.0)
    data = json.loads(json.dumps(snapshot._encode(block)))
    assert type(snapshot._Decoder().value(data).self_attn) is snapshot._Shadow  # no class named: every one a shadow
    shadow = snapshot._Decoder(checks.decoder._DECODER_MODULES).value(data)
    assert type(shadow) is snapshot._Shadow  # the learner's class never comes back
    assert type(shadow.self_attn) is tl.MultiHeadAttention and type(shadow.norm1) is torch.nn.LayerNorm
    assert record._fingerprint(shadow, (), {}) == record._fingerprint(block, (), {})
    x = torch.randn(1, 2, 16)
    assert torch.equal(shadow.self_attn(x, x, x)[0], block.self_attn(x, x, x)[0])
    with pytest.raises(RuntimeError, match="cannot run in the grader"):
        shadow(x, x)
