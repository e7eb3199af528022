"""Training: the loss, the schedule, and a model that really learns the copy task."""

import math

import pytest
import torch

import transformer_lib as tl
from transformer_lib import data


def test_sequence_loss_ignores_padding_and_smooths_labels():
    logits = torch.randn(2, 3, 5)
    targets = torch.tensor([[1, 2, 0], [3, 0, 0]])
    keep = targets != 0
    want = torch.nn.functional.cross_entropy(logits[keep], targets[keep])
    assert torch.allclose(tl.sequence_loss(logits, targets, pad_id=0), want)
    perfect = torch.full((1, 1, 4), -1e9)
    perfect[0, 0, 1] = 1e9
    assert tl.sequence_loss(perfect, torch.tensor([[1]])) < 1e-6
    smoothed = tl.sequence_loss(perfect.clamp(-50, 50), torch.tensor([[1]]), label_smoothing=0.1)
    assert smoothed > 1.0  # smoothing punishes over-confidence
    with pytest.raises(ValueError, match="targets: expected shape"):
        tl.sequence_loss(logits, targets[:, :2])


def test_noam_schedule_warms_up_then_decays():
    lrs = [tl.noam_lr(s, 512, 4000) for s in range(1, 20001)]
    peak = max(range(len(lrs)), key=lrs.__getitem__) + 1
    assert peak == 4000
    assert math.isclose(lrs[3999], 512**-0.5 * 4000**-0.5)
    assert lrs[19999] < lrs[3999] / 2
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = tl.noam_schedule(opt, 512, 4000)
    assert math.isclose(opt.param_groups[0]["lr"], tl.noam_lr(1, 512, 4000))
    opt.step(), sched.step()
    assert math.isclose(opt.param_groups[0]["lr"], tl.noam_lr(2, 512, 4000))


def test_small_model_learns_the_copy_task():
    """>= 99% exact match with greedy decoding on held-out sequences, on the CPU, seeded."""
    tl.seed_everything(0)
    n_symbols = 8
    train_pairs = data.make_task("copy", 2000, min_len=2, max_len=6, n_symbols=n_symbols, seed=0)
    test_pairs = data.make_task("copy", 200, min_len=2, max_len=6, n_symbols=n_symbols, seed=1)
    vocab = data.task_vocab_size(n_symbols)
    cfg = tl.TransformerConfig(
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=32,
        n_heads=4,
        n_encoder_layers=1,
        n_decoder_layers=1,
        d_ff=64,
        dropout=0.0,
        max_len=16,
    )
    model = tl.Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    loader = data.make_loader(train_pairs, 32, seed=0)
    sched = torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.02, total_iters=6 * len(loader))
    history = tl.train(model, loader, epochs=6, optimizer=opt, scheduler=sched, progress=False)
    scores = tl.evaluate(model, data.make_loader(test_pairs, 100, shuffle=False))
    assert history.loss[-1] < history.loss[0] / 10
    assert scores["exact_match"] >= 0.99, scores


def test_paper_adam_uses_the_papers_betas_and_epsilon():
    opt = tl.training.paper_adam([torch.nn.Parameter(torch.zeros(2))], lr=0.5)
    group = opt.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9 and group["lr"] == 0.5


def test_exact_matches_cuts_after_eos_and_counts_whole_sequences():
    eos = 2
    outputs = [[5, 6, 2, 0, 0], [5, 6, 7, 2, 0], [5, 6], [5, 2, 9, 9, 9]]
    references = [[5, 6, 2], [5, 6, 2], [5, 6, 2], [5, 2]]
    assert tl.training.exact_matches(outputs, references, eos) == 2  # rows 0 and 3; row 2 never ended
    with pytest.raises(ValueError, match="outputs, references"):
        tl.training.exact_matches(outputs, references[:2], eos)


def _tiny_copy_model_and_loader():
    tl.seed_everything(0)
    pairs = data.make_task("copy", 64, min_len=2, max_len=4, n_symbols=5, seed=0)
    vocab = data.task_vocab_size(5)
    cfg = tl.TransformerConfig(
        vocab, vocab, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32, dropout=0.0
    )
    return tl.Transformer(cfg), data.make_loader(pairs, 16, seed=0)


def _tiny_copy_run(**kwargs):
    model, loader = _tiny_copy_model_and_loader()
    return model, tl.train(model, loader, max_steps=4, progress=False, **kwargs)


def test_train_records_the_gradient_norm_before_clipping():
    """grad_norm is the global norm before clipping: the same at step 1 with and without a limit, equal to the norm
    computed by hand, while a tiny limit changes every later step."""
    _, free = _tiny_copy_run(clip_norm=None)
    _, clipped = _tiny_copy_run(clip_norm=1e-3)
    assert len(free.grad_norm) == len(free.loss) == 4 and min(free.grad_norm) > 1e-3
    assert clipped.grad_norm[0] == pytest.approx(free.grad_norm[0], rel=1e-6)  # same weights, same gradient
    assert clipped.loss[1] != free.loss[1]  # the clipped first step moved the weights less
    model, loader = _tiny_copy_model_and_loader()
    batch = next(iter(loader))  # the first batch of the runs above
    tl.sequence_loss(model(batch.src, batch.tgt_in), batch.tgt_out).backward()
    by_hand = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    assert free.grad_norm[0] == pytest.approx(float(by_hand), rel=1e-5)
    with pytest.raises(ValueError, match="clip_norm"):
        _tiny_copy_run(clip_norm=0.0)


def test_train_calls_on_step_after_every_step_and_restores_training_mode():
    seen = []

    def on_step(step, model):
        seen.append((step, model.training))
        model.eval()  # train() must switch it back

    model, history = _tiny_copy_run(on_step=on_step)
    assert seen == [(1, True), (2, True), (3, True), (4, True)]
    assert len(history.loss) == 4 and not model.training  # train() leaves the model in eval mode when done
