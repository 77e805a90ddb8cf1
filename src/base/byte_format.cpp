#include "base/byte_format.h"

#include <cmath>
#include <cstdio>

namespace monet {

std::string format_bytes(int64_t bytes, bool exact) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (std::abs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  std::string s = buf;
  if (exact && u > 0) s += " (" + std::to_string(bytes) + " B)";
  return s;
}

}  // namespace monet
