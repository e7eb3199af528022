"""Tests for transformer_lib.book.recurrent: the Chapter 1 experiments (timing, gradient probe, recall task)."""

import math

import pytest
import torch
from torch import nn

from transformer_lib.book import recall
from transformer_lib.book import recurrent as R
from transformer_lib.data import recall_task


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("kind, cls", [("rnn", nn.RNN), ("lstm", nn.LSTM), ("gru", nn.GRU)])
def test_make_sequence_layer_recurrent_kinds(kind, cls):
    layer = R.make_sequence_layer(kind, 8, n_layers=2)
    assert type(layer) is cls and layer.batch_first and layer.num_layers == 2 and layer.hidden_size == 8
    assert R.hidden_states(layer, torch.randn(3, 5, 8)).shape == (3, 5, 8)


def test_make_sequence_layer_attention_keeps_shape_and_has_no_dropout():
    layer = R.make_sequence_layer("attention", 8, n_heads=2, n_layers=2).train()
    x = torch.randn(3, 5, 8)
    assert R.hidden_states(layer, x).shape == (3, 5, 8)
    # train mode, yet deterministic: no dropout
    assert torch.equal(R.hidden_states(layer, x), R.hidden_states(layer, x))


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(kind="transformer", d_model=8), ValueError, "kind"),
        (dict(kind="rnn", d_model=0), ValueError, "d_model"),
        (dict(kind="rnn", d_model=8, n_layers=0), ValueError, "n_layers"),
    ],
)
def test_make_sequence_layer_rejects_bad_arguments(kwargs, error, words):
    with pytest.raises(error, match=words):
        R.make_sequence_layer(**kwargs)


def test_sequential_steps_is_linear_for_recurrence_and_constant_for_attention():
    assert [R.sequential_steps("lstm", n) for n in (1, 16, 1024)] == [1, 16, 1024]
    assert [R.sequential_steps("attention", n) for n in (1, 16, 1024)] == [1, 1, 1]
    assert R.sequential_steps("gru", 100, n_layers=3) == 102  # a wavefront: layer l starts one step after l-1
    assert R.sequential_steps("attention", 100, n_layers=3) == 3
    with pytest.raises(ValueError, match="seq_len"):
        R.sequential_steps("rnn", 0)


def test_sequential_steps_matches_an_explicit_rnn_loop():
    # nn.RNN equals h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) run once per position.
    rnn, x = nn.RNN(4, 6, batch_first=True), torch.randn(2, 7, 4, requires_grad=True)
    cell = nn.RNNCell(4, 6)
    cell.load_state_dict({k[:-3]: v for k, v in rnn.state_dict().items()})  # weight_ih_l0 -> weight_ih
    h, outs = torch.zeros(2, 6), []
    for t in range(7):
        h = cell(x[:, t], h)
        outs.append(h)
    out = rnn(x)[0]
    assert torch.allclose(torch.stack(outs, 1), out, atol=1e-6)
    # The steps really are sequential: the last output depends on the first input through all 7 steps, and no
    # output depends on a later input, so no step can start before the one before it has finished.
    (grad_first,) = torch.autograd.grad(out[:, -1].sum(), x, retain_graph=True)
    (grad_middle,) = torch.autograd.grad(out[:, 3].sum(), x)
    assert grad_first[:, 0].abs().sum() > 0 and torch.equal(grad_middle[:, 4:], torch.zeros_like(grad_middle[:, 4:]))
    assert R.sequential_steps("rnn", 7) == 7


def test_orthogonal_rnn_has_every_eigenvalue_on_the_radius():
    rnn = R.orthogonal_rnn(16, 0.7, seed=3)
    moduli = torch.linalg.eigvals(rnn.weight_hh_l0.detach().double()).abs()
    assert torch.allclose(moduli, torch.full_like(moduli, 0.7), atol=1e-5)
    assert torch.equal(rnn.weight_hh_l0, R.orthogonal_rnn(16, 0.7, seed=3).weight_hh_l0)  # seeded
    with pytest.raises(ValueError, match="radius"):
        R.orthogonal_rnn(16, 0.0)


@pytest.mark.parametrize("kind", R.LAYER_KINDS)
def test_gradient_vs_distance_equals_the_full_jacobian(kind):
    layer = R.make_sequence_layer(kind, 4, n_heads=2)
    x = torch.randn(5, 4, dtype=torch.float64)
    probe = R.gradient_vs_distance(layer, x=x)
    reference = layer.double().eval()
    jac = torch.autograd.functional.jacobian(lambda inp: R.hidden_states(reference, inp[None])[0, -1], x)  # (C, T, C)
    expected = jac.pow(2).sum(dim=(0, 2)).sqrt().flip(0)  # by distance
    assert probe.shape == (5,) and probe.dtype == torch.float64
    assert torch.allclose(probe, expected, rtol=1e-6, atol=1e-12)


def test_gradient_vs_distance_vanishes_for_an_rnn_and_not_for_attention():
    rnn_grad = R.gradient_vs_distance(R.orthogonal_rnn(16, 0.5), 40)
    attn_grad = R.gradient_vs_distance(R.make_sequence_layer("attention", 16), 40)
    assert (rnn_grad > 0).all()  # float64: no underflow to zero
    assert rnn_grad[39] / rnn_grad[1] < 1e-8  # roughly 0.5 per step over 38 steps
    assert attn_grad[1:].max() / attn_grad[1:].min() < 10  # path length 1: no decay with distance


def test_gradient_vs_distance_leaves_the_layer_unchanged_and_validates():
    layer = R.make_sequence_layer("lstm", 4).train()
    before = {k: v.clone() for k, v in layer.state_dict().items()}
    R.gradient_vs_distance(layer, 6)
    assert layer.training and all(torch.equal(v, before[k]) for k, v in layer.state_dict().items())
    assert next(layer.parameters()).dtype == torch.float32
    with pytest.raises(ValueError, match="seq_len"):
        R.gradient_vs_distance(layer)
    with pytest.raises(ValueError, match="x"):
        R.gradient_vs_distance(layer, x=torch.randn(1, 6, 4))


def test_timing_result_slope_and_table():
    result = R.TimingResult(
        [10, 100, 1000],
        {"rnn": [1e-3, 1e-2, 1e-1], "attention": [1e-3] * 3},
        {"rnn": [10, 100, 1000], "attention": [1, 1, 1]},
    )
    assert math.isclose(result.slope("rnn"), 1.0) and math.isclose(result.slope("attention"), 0.0, abs_tol=1e-12)
    assert math.isclose(result.slope("rnn", min_len=100), 1.0)
    assert "100.000 ms" in result.table()
    with pytest.raises(ValueError, match="min_len"):
        result.slope("rnn", min_len=1000)
    with pytest.raises(ValueError, match="kind"):
        result.slope("gru")


def test_benchmark_forward_reports_every_kind_and_the_step_counts():
    result = R.benchmark_forward([4, 8], d_model=8, n_heads=2, batch_size=2, repeats=2)
    assert set(result.seconds) == {"rnn", "lstm", "gru", "attention", "rnn_no_recurrence"}
    assert all(len(v) == 2 and min(v) > 0 for v in result.seconds.values())
    assert result.steps["lstm"] == [4, 8] and result.steps["attention"] == result.steps["rnn_no_recurrence"] == [1, 1]
    only = R.benchmark_forward([4], kinds=("gru",), control=False, d_model=8, repeats=1)
    assert set(only.seconds) == {"gru"}
    with pytest.raises(ValueError, match="kinds"):
        R.benchmark_forward([4], kinds=("cnn",))


def test_benchmark_forward_keeps_the_fastest_repeat(monkeypatch):
    # The first round (5 kinds x 2 lengths = 10 calls) is slow, the later rounds fast: the fastest is reported.
    calls = []

    def fake_time_call(fn, *, repeats=1, warmup=0, device="cpu"):
        calls.append(fn)
        return [0.5 if len(calls) <= 10 else 0.2] * repeats

    monkeypatch.setattr(R, "time_call", fake_time_call)
    result = R.benchmark_forward([4, 8], d_model=8, n_heads=2, batch_size=2, repeats=3)
    assert len(calls) == 30 and all(v == [0.2, 0.2] for v in result.seconds.values())


def test_time_call_counts_calls():
    calls = []
    seconds = R.time_call(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(seconds) == 3 and len(calls) == 5 and all(s >= 0 for s in seconds)


@pytest.mark.parametrize("kind", R.RecallModel.KINDS)
def test_recall_model_reads_the_last_position(kind):
    model = R.RecallModel(kind, vocab_size=12, d_model=8, n_heads=2, max_len=10)
    ids, _ = recall_task(3, 5)
    assert model(ids).shape == (3, 12)
    # The prediction depends on the first token: that is what makes the task a long-range one.
    changed = ids.clone()
    changed[:, 0] = 4 + (changed[:, 0] - 4 + 1) % 8
    assert not torch.allclose(model(ids), model(changed))


def test_recall_model_logits_are_those_of_the_last_position():
    ids, _ = recall_task(3, 5)
    transformer = R.RecallModel("transformer", 12, 8, n_heads=2, max_len=10)
    assert torch.equal(transformer(ids), transformer.encoder(ids)[:, -1])
    lstm = R.RecallModel("lstm", 12, 8)
    states, (h_n, _) = lstm.rnn(lstm.embed(ids))  # (B, T, C), (1, B, C)
    assert torch.allclose(lstm(ids), lstm.head(h_n[0])) and torch.allclose(states[:, -1], h_n[0])


def test_recall_model_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        R.RecallModel("cnn", 12)


class _AlwaysFour(nn.Module):
    """Predicts token id 4 whatever the input: its accuracy is the share of keys equal to 4."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, ids):
        return nn.functional.one_hot(torch.full_like(ids[:, 0], 4), 12).float() + 0 * self.dummy


def test_recall_accuracy_of_a_constant_model_is_the_frequency_of_its_answer():
    acc = R.recall_accuracy(_AlwaysFour(), 6, n_examples=400)
    _, targets = recall_task(400, 6, seed=recall._TEST_SEED + 6)
    assert acc == pytest.approx((targets == 4).float().mean().item())
    assert 0.05 < acc < 0.2  # about 1/8


def test_train_recall_learns_a_short_distance():
    torch.manual_seed(0)
    model = R.RecallModel("lstm", 12, 16)
    losses = R.train_recall(model, 2, steps=120, lr=1e-2)
    assert len(losses) == 120 and losses[-1] < losses[0] / 4
    assert R.recall_accuracy(model, 2) > 0.9  # chance is 1/8


def test_recall_experiment_shapes_and_chance():
    result = R.recall_experiment(("gru", "transformer"), (2, 3), d_model=8, steps=2, batch_size=4)
    assert result.distances == [2, 3] and result.chance == 0.125
    assert set(result.accuracy) == {"gru", "transformer"}
    assert all(len(v) == 2 and all(0 <= a <= 1 for a in v) for v in result.accuracy.values())
    assert all(len(v) == 2 for v in result.seconds.values())


def test_command_line_prints_tables(capsys):
    R.main(["timing", "--lengths", "4,8", "--d-model", "8", "--batch-size", "2", "--repeats", "1", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "rnn_no_recurrence" in out and len(out.strip().splitlines()) == 4
    R.main(["recall", "--distances", "2", "--steps", "2", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "lstm" in out and "transformer" in out and "k=2" in out
