#!/usr/bin/python3
"""Two full-size models from Python at a budget ratio of the whole step, against plain
PyTorch in one process with monet's tracking allocator: torchvision's MaxViT-T (batch 8,
224², 1000 classes; 642 of its operators on the generic ATen path, einsum among them)
and a language model of two LSTM layers (embedding, nn.LSTM, head; hidden 1024,
sequence 256, batch 32; the recurrent layer is one generic node over its weight list).
Both share the model's parameters and one SGD-momentum optimizer and run interleaved
(PyTorch, monet, PyTorch, ...; one warm-up round first). monet plans the whole step
(--whole-step: the cross-entropy inside the plan, the updates fused into the backward),
or with the loss outside the plan. A step's peak is the tracked peak above what was
alive before the model was built; times are medians.

Usage: PYTHONPATH=build/python bench/full_size_python.py {maxvit_t,lstm_lm}
           [--batch N] [--budgets 0.5] [--iters 2] [--time-limit 60] [--whole-step]
           [--json FILE]
"""
import argparse

import torch
import torch.nn.functional as F
import torchvision

import monet
from interleaved_steps import budget_curve, parse_curve_arguments


class LstmLM(torch.nn.Module):
    """Token ids [N, T] to logits [N, T, V]: an embedding, a stacked LSTM and a head."""

    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.rnn = torch.nn.LSTM(hidden, hidden, num_layers=layers, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h)


def maxvit(a, gen):
    model = torchvision.models.maxvit_t(num_classes=1000)
    x = torch.randn(a.batch or 8, 3, 224, 224, generator=gen)
    y = torch.randint(0, 1000, (x.shape[0],), generator=gen)
    return model, x, y, F.cross_entropy


def lstm_lm(a, gen):
    model = LstmLM(a.vocab, a.hidden, a.layers)
    x = torch.randint(0, a.vocab, (a.batch or 32, a.seq), generator=gen)
    y = torch.randint(0, a.vocab, x.shape, generator=gen)
    return model, x, y, lambda out, t: F.cross_entropy(out.transpose(1, 2), t)


MODELS = {"maxvit_t": maxvit, "lstm_lm": lstm_lm}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=None,
                    help="batch size (default: 8 for maxvit_t, 32 for lstm_lm)")
    for name, default in (("hidden", 1024), ("layers", 2), ("seq", 256), ("vocab", 10000),
                          ("iters", 2)):
        ap.add_argument("--" + name, type=int, default=default,
                        help="lstm_lm's size" if name != "iters" else "measured rounds")
    a = parse_curve_arguments(ap, "0.5")
    gen = torch.Generator().manual_seed(1)
    before = monet.current_memory()
    torch.manual_seed(0)
    model, x, y, loss_fn = MODELS[a.model](a, gen)
    model.train()
    config = {"model": a.model, "batch": x.shape[0], "input": list(x.shape)}
    if a.model == "lstm_lm":
        config.update({k: getattr(a, k) for k in ("hidden", "layers", "seq", "vocab")})
    print(f"{a.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, "
          f"input {list(x.shape)}, {torch.get_num_threads()} threads", flush=True)
    budget_curve(model, x, y, loss_fn, {}, a, before, config)


if __name__ == "__main__":
    main()
