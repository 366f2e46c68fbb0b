// lib/machine/wisdom.cpp — first-use measurements kept per CPU (wisdom.hpp).
#include "wisdom.hpp"

#include "../environment/environment.hpp"
#include "../environment/run_once.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace prism::detail {

namespace {

// The file format; a file of another version is ignored (and replaced on the next write).
constexpr const char* format_version = "1";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// mkdir -p for the cache folder; true when it exists afterwards.
bool make_folder(const std::string& dir) {
  if (dir.empty()) return false;
  for (std::size_t at = 1; at <= dir.size(); ++at)
    if (at == dir.size() || dir[at] == '/') {
      const std::string part = dir.substr(0, at);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  struct stat st{};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string cpu_identity() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return "";
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  __get_cpuid(1, &a, &b, &c, &d);
  // Family and model with their extended fields (Intel SDM vol. 2A, CPUID leaf 1): e.g.
  // eax = 0x000806f2 gives family 6, model 0x8f = 143 (extended model 8, model 15).
  const unsigned base_family = (a >> 8) & 0xf, ext_family = (a >> 20) & 0xff;
  const unsigned family = base_family == 0xf ? base_family + ext_family : base_family;
  const unsigned model = (base_family == 6 || base_family == 0xf) ? (((a >> 16) & 0xf) << 4) | ((a >> 4) & 0xf)
                                                                   : (a >> 4) & 0xf;
  char brand[49] = {};
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext >= 0x80000004u)
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4];
      __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, 16);
    }
  std::ostringstream os;
  os << vendor << " family " << family << " model " << model << ": " << trim(brand);
  return os.str();
#else
  return "";
#endif
}

std::string wisdom_path(const std::string& dir, const std::string& cpu) {
  if (dir.empty()) return "";
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char ch : cpu) h = (h ^ ch) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return dir + "/first-use-" + hex;
}

wisdom::wisdom(std::string path, std::string cpu) : path_(std::move(path)), cpu_(std::move(cpu)) {
  if (path_.empty()) return;
  std::ifstream in(path_);
  if (!in) return;
  std::map<std::string, std::string> read;
  bool this_cpu = false, this_version = false;
  for (std::string line; std::getline(in, line);) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) return;  // malformed: ignored whole
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "cpu") this_cpu = value == cpu_;
    else if (key == "version") this_version = value == format_version;
    else read[key] = value;
  }
  // A machine key's value that is not a positive finite number (a file edited by hand, or
  // damaged) makes the whole set unread: it is measured again and rewritten.
  for (machine_key k : all_machine_keys)
    if (const auto it = read.find(to_string(k)); it != read.end() && !positive_value(it->second)) return;
  if (this_cpu && this_version) values_ = std::move(read);
}

// The set's key: this CPU, and the kernels its measurements ran on when a variable chose
// them (a PRISM_SIMD=scalar run measures scalar kernels, which must not stand for the
// vector ones of later runs), e.g. "AuthenticAMD family 26 model 2: ...; PRISM_SIMD=scalar".
std::string measured_on(const environment& env) {
  std::string key = cpu_identity();
  try {
    if (env.simd.get() != simd_choice::automatic) key += env.simd.get() == simd_choice::avx2 ? "; PRISM_SIMD=avx2" : "; PRISM_SIMD=scalar";
  } catch (...) {  // a bad value is an error where it is used; here it keys nothing
  }
  if (!env.leaf_kernels.empty()) key += "; PRISM_LEAF_KERNELS=" + env.leaf_kernels;
  return key;
}

wisdom& wisdom::process() {
  static wisdom* w = [] {
    const environment& env = process_environment();
    const bool on = env.first_use.get();
    const std::string key = measured_on(env);
    auto* made = new wisdom(on ? wisdom_path(env.cache_dir, key) : std::string(), key);
    made->enabled_ = on;
    return made;
  }();
  return *w;
}

std::optional<std::string> wisdom::find(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, std::string> wisdom::all() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return values_;
}

bool wisdom::keep(const std::string& key, const std::string& value) { return keep({{key, value}}); }

bool wisdom::keep(const std::map<std::string, std::string>& pairs) {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [k, v] : pairs) values_[k] = v;
  if (path_.empty()) return false;
  const std::string dir = path_.substr(0, path_.rfind('/'));
  if (!make_folder(dir)) return false;
  // Other processes may have kept values since this one read the file. Under an exclusive
  // lock on a file beside it (released when closed; where locks do not work the rename
  // below still keeps the file whole), the file is read again, this call's pairs laid over
  // it, and the whole written to a fresh temporary renamed over it: concurrent writers lose
  // nothing and leave one complete file, never a mixture.
  const int lock_fd = ::open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd >= 0) (void)::flock(lock_fd, LOCK_EX);
  struct closer {
    int fd;
    ~closer() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock_fd};
  for (const auto& [k, v] : wisdom(path_, cpu_).values_) values_[k] = v;
  for (const auto& [k, v] : pairs) values_[k] = v;
  std::string text = "# prism's first-use measurements for this CPU (lib/machine/wisdom.hpp); delete the file to measure again\n";
  text += std::string("version: ") + format_version + "\ncpu: " + cpu_ + "\n";
  for (const auto& [k, v] : values_) text += k + ": " + v + "\n";
  // A scratch file of this process and call (the lock keeps other processes out), created
  // 0644 under the umask as any file the user makes (mkstemp's would be 0600 whatever it is).
  static std::atomic<unsigned> calls{0};
  const std::string temp = path_ + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(calls++);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST && ::unlink(temp.c_str()) == 0)  // a killed process's of the same pid: stale under the lock
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool written = true;
  for (std::size_t at = 0; written && at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    written = n > 0;
    at += written ? std::size_t(n) : 0;
  }
  written = ::close(fd) == 0 && written;
  if (!written || std::rename(temp.c_str(), path_.c_str()) != 0) {
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

namespace {

// The first-use values of the machine keys, lock-free once loaded (0: none).
std::array<std::atomic<double>, std::size(all_machine_keys)> first_use_table{};
run_once first_use_loaded;  // every small call reads a key here

void load_first_use() {
  first_use_loaded([] {
    const wisdom& w = wisdom::process();
    for (machine_key k : all_machine_keys)
      if (const auto v = w.find(to_string(k)))
        if (const auto x = positive_value(*v)) first_use_table[std::size_t(k)].store(*x);
  });
}

}  // namespace

std::string value_text(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.12g", v);
  if (std::strtod(text, nullptr) != v) std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::optional<double> positive_value(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(x > 0) || !std::isfinite(x)) return std::nullopt;
  return x;
}

double first_use_value(machine_key k) noexcept {
  try {
    load_first_use();
  } catch (...) {
    return 0;  // an unreadable set is no set
  }
  return first_use_table[std::size_t(k)].load(std::memory_order_relaxed);
}

bool keep_first_use_values(const std::map<machine_key, double>& values, const std::map<std::string, std::string>& extra) {
  load_first_use();
  std::map<std::string, std::string> pairs = extra;
  for (const auto& [k, v] : values) {
    if (!(v > 0)) continue;
    first_use_table[std::size_t(k)].store(v, std::memory_order_relaxed);
    pairs[to_string(k)] = value_text(v);
  }
  return wisdom::process().keep(pairs);
}

bool first_use_known(std::initializer_list<machine_key> keys) noexcept {
  for (machine_key k : keys)
    if (first_use_value(k) <= 0) return false;
  return true;
}

}  // namespace prism::detail
