#include "base/progress.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

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

std::atomic<int> child_fd{-1};  // write_progress_to_fd's descriptor; -1: none

std::string formatted(const char* format, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  return text;
}

// On a terminal, a status line ('\r' first, no newline) replaces the one before it.
// Anywhere else (a file, a pipe, a CI log) each status line becomes a line of its own,
// without its padding, and the lone "\n" that ends a run of them is dropped.
void write_to_stderr(const char* format, va_list args) {
  static const bool terminal = isatty(STDERR_FILENO) == 1;
  if (terminal) {
    std::vfprintf(stderr, format, args);
    return;
  }
  static std::atomic<bool> status_line_open{false};
  std::string text = formatted(format, args);
  if (text == "\n" && status_line_open.exchange(false)) return;
  if (!text.empty() && text.front() == '\r') {
    text.erase(0, 1);
    text.erase(text.find_last_not_of(' ') + 1);
    text += '\n';
    status_line_open = true;
  } else {
    status_line_open = false;
  }
  std::fputs(text.c_str(), stderr);
}

void emit(ProgressLevel level, const char* format, va_list args) {
  const int fd = child_fd.load();
  if (fd >= 0) {
    char text[1024];
    const int n = std::vsnprintf(text, sizeof text, format, args);
    if (n > 0) {
      const ssize_t written = write(fd, text, std::min(static_cast<size_t>(n), sizeof text - 1));
      (void)written;  // a full or closed pipe drops the line
    }
    return;
  }
  std::shared_ptr<const ProgressSink> sink;
  {
    std::lock_guard<std::mutex> lock(sink_mutex());
    sink = installed_sink();
  }
  if (sink) {
    (*sink)(level, formatted(format, args));
  } else {
    write_to_stderr(format, args);
  }
}

}  // namespace

void set_progress_sink(ProgressSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  installed_sink() = sink ? std::make_shared<const ProgressSink>(std::move(sink)) : nullptr;
}

void write_progress_to_fd(int fd) { child_fd = fd; }

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
