// Memory sizes as people read them, the same in every message of the library and the CLI.
#pragma once

#include <cstdint>
#include <string>

namespace monet {

/// "97.9 MiB" (B, KiB, MiB, GiB or TiB, one decimal above bytes); `exact` adds the byte
/// count: "97.9 MiB (102760448 B)".
std::string format_bytes(int64_t bytes, bool exact = false);

}  // namespace monet
