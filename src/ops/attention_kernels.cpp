// Attention (OpKind::kAttention, graph/attention_spec.h): scores = scale * q kᵀ, masked;
// P = softmax(scores); output = dropout(P) v. The backward of one block of query rows,
// given its probabilities P_b and the output gradient dO_b:
//   dV += (P_b ∘ M_b)ᵀ dO_b;  dP_b = (dO_b vᵀ) ∘ M_b;  dS_b = P_b ∘ (dP_b - rowsum(P_b ∘ dP_b))
//   dQ_b = scale dS_b k;       dK += scale dS_bᵀ q_b
// with rowsum(P_b ∘ dP_b) = rowsum(dO_b ∘ O_b), O_b = (P_b ∘ M_b) v (FlashAttention's D).
// (M_b the dropout noise; masked_fill's masked scores get no gradient; the scale goes on
// the smaller operands: q's rows, dQ_b and dK's terms).
#include <algorithm>

#include "graph/attention_spec.h"
#include "ops/op_kernels.h"

namespace monet {
namespace {

// Rows [r0, r0 + rows) of a constant broadcast against the scores [..., T, S].
at::Tensor mask_rows(const at::Tensor& mask, int64_t r0, int64_t rows) {
  if (mask.dim() < 2 || mask.size(-2) == 1) return mask;
  return mask.narrow(-2, r0, rows);
}

// Rows [r0, r0 + rows) of the scaled, masked scores.
at::Tensor scores(const AttentionSpec& a, const at::Tensor& q, const at::Tensor& k, int64_t r0,
                  int64_t rows) {
  // The scale goes on q's rows, the smaller operand (rows x D against rows x S).
  at::Tensor s = at::matmul(q.narrow(-2, r0, rows) * a.scale, k.transpose(-2, -1));
  switch (a.mask) {
    case AttentionMask::kNone:
      break;
    case AttentionMask::kFill:
      s.masked_fill_(mask_rows(a.mask_values, r0, rows), a.fill);
      break;
    case AttentionMask::kAdd:
      s.add_(mask_rows(a.mask_values, r0, rows).to(s.scalar_type()));
      break;
  }
  return s;
}

// The dropout noise of rows [r0, r0 + rows) shaped like `block` [..., rows, S]: row i's
// noise comes from the seed (seed, i) whatever the blocking.
at::Tensor noise_rows(double p, const at::Tensor& block, int64_t r0, uint64_t seed) {
  std::vector<int64_t> row_shape = block.sizes().vec();
  row_shape.erase(row_shape.end() - 2);
  std::vector<at::Tensor> rows;
  for (int64_t i = 0; i < block.size(-2); ++i)
    rows.push_back(dropout_noise(row_shape, p, node_seed(seed, static_cast<int>(r0 + i))));
  return at::stack(rows, -2).to(block.scalar_type());
}

bool dropping(const Node& n, bool training) { return training && n.attrs.p > 0; }

// sum += term, the first term taken as it is.
void accumulate(at::Tensor& sum, const at::Tensor& term) {
  if (sum.defined())
    sum.add_(term);
  else
    sum = term;
}

std::vector<int64_t> output_shape(const at::Tensor& q, const at::Tensor& v) {
  std::vector<int64_t> shape = q.sizes().vec();
  shape.back() = v.size(-1);
  return shape;
}

}  // namespace

ForwardOutput kernels::attention_forward(const Node& n, const ForwardImplInfo& impl,
                                         const std::vector<at::Tensor>& in, const NodeState& state,
                                         bool training) {
  const AttentionSpec& a = *n.attrs.attention;
  const at::Tensor &q = in[0], &k = in[1], &v = in[2];
  const int64_t t = q.size(-2);
  const bool drop = dropping(n, training);
  ForwardOutput out;
  if (impl.name == "materialised") {
    out.intermediate = at::softmax(scores(a, q, k, 0, t), -1);
    out.output =
        at::matmul(drop ? out.intermediate * noise_rows(n.attrs.p, out.intermediate, 0, state.seed)
                        : out.intermediate,
                   v);
    return out;
  }
  const bool lse = impl.name == "lse";
  out.output = at::empty(output_shape(q, v), q.options());
  if (lse) out.intermediate = at::empty(q.sizes().slice(0, q.dim() - 1), q.options());
  for (int64_t r0 = 0; r0 < t; r0 += a.block_rows) {
    const int64_t rows = std::min(a.block_rows, t - r0);
    at::Tensor p = scores(a, q, k, r0, rows);
    if (lse) {
      const at::Tensor l = at::logsumexp(p, -1, true);
      out.intermediate.narrow(-1, r0, rows).copy_(l.squeeze(-1));
      p.sub_(l).exp_();
    } else {
      p = at::softmax(p, -1);
    }
    if (drop) p.mul_(noise_rows(n.attrs.p, p, r0, state.seed));
    out.output.narrow(-2, r0, rows).copy_(at::matmul(p, v));
  }
  return out;
}

std::vector<at::Tensor> kernels::attention_backward(const Node& n, const BackwardImplInfo& impl,
                                                    const BackwardArgs& b, const NodeState& state) {
  const AttentionSpec& a = *n.attrs.attention;
  const at::Tensor &q = b.inputs[0], &k = b.inputs[1], &v = b.inputs[2];
  const int64_t t = q.size(-2);
  const bool whole = impl.name == "probabilities";
  const int64_t block = whole ? t : a.block_rows;
  const bool drop = dropping(n, true);
  std::vector<at::Tensor> grads(3);
  if (b.needs_grad[0] && !whole) grads[0] = at::empty(q.sizes(), q.options());
  for (int64_t r0 = 0; r0 < t; r0 += block) {
    const int64_t rows = std::min(block, t - r0);
    at::Tensor p;
    if (whole) {
      p = b.intermediate;
    } else if (impl.name == "recompute_lse") {
      p = scores(a, q, k, r0, rows).sub_(b.intermediate.narrow(-1, r0, rows).unsqueeze(-1)).exp_();
    } else {
      p = at::softmax(scores(a, q, k, r0, rows), -1);
    }
    const at::Tensor go = b.grad_output.narrow(-2, r0, rows);
    const at::Tensor noise = drop ? noise_rows(n.attrs.p, p, r0, state.seed) : at::Tensor();
    at::Tensor dropped = drop ? p * noise : p;
    if (b.needs_grad[2]) accumulate(grads[2], at::matmul(dropped.transpose(-2, -1), go));
    if (!b.needs_grad[0] && !b.needs_grad[1]) continue;
    // softmax's backward from its output, dS = P ∘ (dP - rowsum(P ∘ dP)), in dP's storage:
    // rowsum(P ∘ dP) = rowsum(dO_b ∘ O_b) with O_b = (P ∘ M) v the block's output, so
    // no second tensor of the scores' size is made.
    const at::Tensor rowsum = (go * at::matmul(dropped, v)).sum(-1, /*keepdim=*/true);
    dropped.reset();
    at::Tensor ds = at::matmul(go, v.transpose(-2, -1));
    if (drop) ds.mul_(noise);
    ds.sub_(rowsum).mul_(p);
    if (a.mask == AttentionMask::kFill) ds.masked_fill_(mask_rows(a.mask_values, r0, rows), 0.0);
    if (b.needs_grad[0]) {
      const at::Tensor dq = at::matmul(ds, k).mul_(a.scale);
      if (whole)
        grads[0] = dq;
      else
        grads[0].narrow(-2, r0, rows).copy_(dq);
    }
    if (b.needs_grad[1])
      accumulate(grads[1], at::matmul(ds.transpose(-2, -1), q.narrow(-2, r0, rows)).mul_(a.scale));
  }
  return grads;
}

at::Tensor kernels::attention_reference(const Node& n, const std::vector<at::Tensor>& in,
                                        bool training, uint64_t seed) {
  const AttentionSpec& a = *n.attrs.attention;
  at::Tensor s = at::matmul(in[0], in[1].transpose(-2, -1)) * a.scale;
  if (a.mask == AttentionMask::kFill) s = s.masked_fill(a.mask_values, a.fill);
  if (a.mask == AttentionMask::kAdd) s = s + a.mask_values.to(s.scalar_type());
  at::Tensor p = at::softmax(s, -1);
  if (dropping(n, training)) p = p * noise_rows(n.attrs.p, p, 0, seed);
  return at::matmul(p, in[2]);
}

}  // namespace monet
