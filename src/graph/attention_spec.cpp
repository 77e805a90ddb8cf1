#include "graph/attention_spec.h"

#include <sstream>

#include "graph/aten_call.h"

namespace monet {

std::string describe_attention(const AttentionSpec& a) {
  std::ostringstream s;
  s << "scale=" << a.scale;
  switch (a.mask) {
    case AttentionMask::kNone:
      break;
    case AttentionMask::kFill:
      s << " mask=fill(" << describe_constant(a.mask_values) << ") fill=" << a.fill;
      break;
    case AttentionMask::kAdd:
      s << " mask=add(" << describe_constant(a.mask_values) << ")";
      break;
  }
  s << " block_rows=" << a.block_rows;
  return s.str();
}

}  // namespace monet
