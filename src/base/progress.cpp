#include "base/progress.h"

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>

namespace monet {

namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<const ProgressSink>& installed_sink() {
  static std::shared_ptr<const ProgressSink> sink;
  return sink;
}

void emit(ProgressLevel level, const char* format, va_list args) {
  std::shared_ptr<const ProgressSink> sink;
  {
    std::lock_guard<std::mutex> lock(sink_mutex());
    sink = installed_sink();
  }
  if (!sink) {
    std::vfprintf(stderr, format, args);
    return;
  }
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  (*sink)(level, text);
}

}  // namespace

void set_progress_sink(ProgressSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  installed_sink() = sink ? std::make_shared<const ProgressSink>(std::move(sink)) : nullptr;
}

void report_progress(const char* format, ...) {
  va_list args;
  va_start(args, format);
  emit(ProgressLevel::kInfo, format, args);
  va_end(args);
}

void report_warning(const char* format, ...) {
  va_list args;
  va_start(args, format);
  emit(ProgressLevel::kWarning, format, args);
  va_end(args);
}

}  // namespace monet
