// Rendezvous from torchrun's environment variables, and a Gloo process group over a
// c10d::TCPStore served by rank 0.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <monet/distributed.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace monet {
namespace {

int env_int(const char* name, int fallback, int min) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < min || x > 65535 * 1024L)
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + v +
                                "' is not an integer >= " + std::to_string(min));
  return static_cast<int>(x);
}

// The local address this host reaches `host` from (no packet is sent): the address the
// other ranks can reach this one at.
std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    throw std::runtime_error("cannot resolve the master address '" + host + "'");
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  std::string address;
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {0};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
      address = text;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (address.empty()) throw std::runtime_error("no route to the master address '" + host + "'");
  return address;
}

}  // namespace

Rendezvous Rendezvous::from_environment() {
  Rendezvous r;
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) r.master_addr = a;
  r.master_port = env_int("MASTER_PORT", r.master_port, 1);
  if (r.master_port > 65535)
    throw std::invalid_argument("environment variable MASTER_PORT is not a port number");
  r.world_size = env_int("WORLD_SIZE", 1, 1);
  r.rank = env_int("RANK", 0, 0);
  r.local_rank = env_int("LOCAL_RANK", 0, 0);
  if (r.rank >= r.world_size)
    throw std::invalid_argument("RANK=" + std::to_string(r.rank) +
                                " is not below WORLD_SIZE=" + std::to_string(r.world_size));
  return r;
}

ProcessGroup ProcessGroup::gloo(const Rendezvous& where, double timeout_seconds) {
  if (where.world_size < 1 || where.rank < 0 || where.rank >= where.world_size)
    throw std::invalid_argument("rank " + std::to_string(where.rank) + " of " +
                                std::to_string(where.world_size) + " is not a rank");
  if (!(timeout_seconds > 0)) throw std::invalid_argument("the timeout must be positive");
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(where.master_port);
  so.isServer = where.rank == 0;
  so.numWorkers = where.world_size;
  so.waitWorkers = true;
  so.timeout = timeout;
  ProcessGroup pg;
  const std::string at = where.master_addr + ":" + std::to_string(where.master_port);
  try {
    pg.store = c10::make_intrusive<c10d::TCPStore>(where.master_addr, so);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(where.rank) + ": " +
                             (where.rank == 0 ? "cannot serve the rendezvous store at " + at
                                              : "cannot reach rank 0's rendezvous store at " + at) +
                             " within " + std::to_string(static_cast<int>(timeout_seconds)) +
                             " s: " + e.what());
  }
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  else
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(
        local_address_towards(where.master_addr, where.master_port)));
  options->threads = 2;
  try {
    pg.group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("monet/gloo", pg.store), where.rank,
        where.world_size, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(where.rank) +
                             ": the Gloo process group did not form: " + e.what());
  }
  return pg;
}

}  // namespace monet
