// LossyOffer: whether a graph's operators offer implementations whose gradients differ
// slightly from autograd's (today one: GELU's backward from a 4-bit code of its input).
// The graph layer's own form of the public API's monet::LossyImplementations
// (include/monet/lossy.h), which api/ translates to it.
#pragma once

#include <stdexcept>
#include <string>

namespace monet {

enum class LossyOffer {
  kExcluded,  // exact implementations only
  kOffered,   // lossy ones offered too
};

inline const char* lossy_offer_name(LossyOffer l) {
  return l == LossyOffer::kOffered ? "offered" : "excluded";
}

/// Parses lossy_offer_name()'s names (plan files); throws std::invalid_argument.
inline LossyOffer lossy_offer_from_name(const std::string& name) {
  if (name == "offered") return LossyOffer::kOffered;
  if (name == "excluded") return LossyOffer::kExcluded;
  throw std::invalid_argument("unknown lossy setting '" + name + "' (known: excluded, offered)");
}

}  // namespace monet
