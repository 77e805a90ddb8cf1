"""The architectures of corpus_models.py, written as their users write them, train like
PyTorch: each is traced by monet.optimize with its loss inside the plan, planned halfway
between its leanest plan and store-all and trained 3 steps of SGD with momentum in
float64; losses and parameters equal PyTorch's (1e-9 relative) and every step's tracked
rise is the predicted one."""
import pytest
import torch

from corpus_models import CASES, VOCAB
from test_model_corpus import STEPS, batches as corpus_batches, check_trains_like_pytorch
from test_model_corpus import sequence_cross_entropy


def batches(kind, shape):
    """Inputs, targets and the loss for `kind` (corpus_models.py's docstring)."""
    g = torch.Generator().manual_seed(1)
    if kind in ("ids_and_mask", "two_tokens"):
        xs = []
        for _ in range(STEPS):
            ids = torch.randint(1, VOCAB, shape, generator=g)
            other = ((torch.rand(shape, generator=g) < 0.8).long() if kind == "ids_and_mask"
                     else torch.randint(1, VOCAB, shape, generator=g))
            other[:, 0] = 1  # a first position never masked
            xs.append((ids, other))
        ys = [torch.randint(0, VOCAB, shape, generator=g) for _ in range(STEPS)]
        return xs, ys, sequence_cross_entropy
    if kind in ("two_features", "features_and_adjacency"):
        xs = []
        for _ in range(STEPS):
            x = torch.randn(shape, generator=g, dtype=torch.float64)
            if kind == "two_features":
                xs.append((x, torch.randn(shape, generator=g, dtype=torch.float64)))
            else:
                n = shape[1]
                edges = (torch.rand(shape[0], n, n, generator=g) < 0.5).double()
                xs.append((x, edges + torch.eye(n, dtype=torch.float64)))
        ys = [torch.randint(0, 10, (shape[0],), generator=g) for _ in range(STEPS)]
        return xs, ys, torch.nn.functional.cross_entropy
    return corpus_batches(kind, shape)


@pytest.mark.parametrize("case", list(CASES))
def test_architecture_trains_like_pytorch(case, cache_dir):
    make, kind, shape = CASES[case]
    torch.manual_seed(0)
    model = make().double().train()
    xs, ys, loss_fn = batches(kind, shape)
    check_trains_like_pytorch(model, xs, ys, loss_fn, None, cache_dir)
