// Progress of long steps (profiling, planning, solving) and warnings about what a step
// skipped (an unreadable cache): lines on stderr by default, or handed to a sink the
// embedding program installs (the Python package sends them to its `logging` logger).
#pragma once

#include <functional>
#include <string>

namespace monet {

enum class ProgressLevel {
  kInfo,     // progress of a step
  kWarning,  // something was skipped or ignored; the step goes on
};

/// Receives each piece of progress text as it would be written to stderr: whole lines
/// ending in '\n', or a status line that replaces the previous one (starting with '\r',
/// without a newline; a lone "\n" ends it). Called from whichever thread reports.
using ProgressSink = std::function<void(ProgressLevel level, const std::string& text)>;

/// Installs `sink` for every later report; an empty sink restores stderr, where status
/// lines are redrawn in place only on a terminal (elsewhere each is a line of its own).
void set_progress_sink(ProgressSink sink);

/// Formats like printf and hands the text to the sink (stderr when none is installed).
void report_progress(const char* format, ...) __attribute__((format(printf, 1, 2)));
void report_warning(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// For a forked child process only (one thread): every later report is written to file
/// descriptor `fd` as it would be to stderr, bypassing the sink and its lock (which
/// another thread of the parent may have held at the fork). Writes that would block are
/// dropped.
void write_progress_to_fd(int fd);

}  // namespace monet
