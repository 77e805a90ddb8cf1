#include "api/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace monet {

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    write(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "'");
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot create '" + tmp + "'");
    f << text;
    f.close();
    if (!f) throw std::runtime_error("write error on '" + tmp + "'");
  });
}

}  // namespace monet
