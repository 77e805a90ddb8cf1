// Whether the planner may use implementations whose gradients differ slightly from
// autograd's (today one: GELU's backward from a 4-bit code of its input, "few-bit
// backward"). Excluded unless asked for: every plan then trains exactly as autograd does.
#pragma once

#include <stdexcept>
#include <string>

namespace monet {

enum class LossyImplementations {
  kExcluded,  // exact implementations only
  kOffered,   // lossy ones offered too (`monet ... --lossy`, monet.optimize(lossy=True))
};

inline const char* lossy_implementations_name(LossyImplementations l) {
  return l == LossyImplementations::kOffered ? "offered" : "excluded";
}

/// Parses lossy_implementations_name()'s names; throws std::invalid_argument.
inline LossyImplementations lossy_implementations_from_name(const std::string& name) {
  if (name == "offered") return LossyImplementations::kOffered;
  if (name == "excluded") return LossyImplementations::kExcluded;
  throw std::invalid_argument("unknown lossy setting '" + name + "' (known: excluded, offered)");
}

}  // namespace monet
