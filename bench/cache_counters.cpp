// bench/cache_counters.cpp — perf_event_open counters of bench/cache_counters.hpp.
#include "cache_counters.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace prism_bench {
namespace {

int open_counter(std::uint64_t cache, std::string& why) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_HW_CACHE;
  a.config = cache | (std::uint64_t(PERF_COUNT_HW_CACHE_OP_READ) << 8) |
             (std::uint64_t(PERF_COUNT_HW_CACHE_RESULT_MISS) << 16);
  a.disabled = 1;
  a.exclude_kernel = 1;  // allowed at perf_event_paranoid 2; the multiply runs in user space
  a.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &a, 0 /* this thread */, -1 /* any cpu */, -1, 0);
  if (fd < 0 && why.empty())
    why = std::string("perf_event_open(") + (cache == PERF_COUNT_HW_CACHE_L1D ? "L1D" : "LL") +
          " read misses) failed: " + std::strerror(errno) +
          (errno == EACCES || errno == EPERM ? " (see /proc/sys/kernel/perf_event_paranoid)" : "");
  return int(fd);
}

std::uint64_t read_counter(int fd) {
  std::uint64_t v = 0;
  if (::read(fd, &v, sizeof v) != ssize_t(sizeof v)) return 0;
  return v;
}

}  // namespace

cache_counters::cache_counters() {
  if (!std::filesystem::exists("/sys/bus/event_source/devices/cpu")) {
    why_ = "no CPU PMU exposed to this system (/sys/bus/event_source/devices/cpu is missing; a VM that hides it)";
    return;
  }
  fd_l1_ = open_counter(PERF_COUNT_HW_CACHE_L1D, why_);
  fd_ll_ = open_counter(PERF_COUNT_HW_CACHE_LL, why_);
  if (!available()) {
    if (fd_l1_ >= 0) ::close(fd_l1_);
    if (fd_ll_ >= 0) ::close(fd_ll_);
    fd_l1_ = fd_ll_ = -1;
  }
}

cache_counters::~cache_counters() {
  if (fd_l1_ >= 0) ::close(fd_l1_);
  if (fd_ll_ >= 0) ::close(fd_ll_);
}

void cache_counters::start() {
  if (!available()) return;
  for (int fd : {fd_l1_, fd_ll_}) {
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

cache_counts cache_counters::stop() {
  cache_counts c;
  if (!available()) {
    c.why = why_;
    return c;
  }
  for (int fd : {fd_l1_, fd_ll_}) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  c.available = true;
  c.l1d_read_misses = read_counter(fd_l1_);
  c.ll_misses = read_counter(fd_ll_);
  return c;
}

}  // namespace prism_bench
