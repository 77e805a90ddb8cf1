// Writing files so that a failure never leaves a partial one behind.
#pragma once

#include <functional>
#include <string>

namespace monet {

/// Calls `write(tmp)` to write a temporary file beside `path`, then renames it over
/// `path`. Any failure (an exception from `write`, a failed rename) removes the temporary
/// and throws std::runtime_error naming `path`; `path` is then untouched.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

/// Writes `text` to `path` atomically.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace monet
