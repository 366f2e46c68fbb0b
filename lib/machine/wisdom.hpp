// lib/machine/wisdom.hpp — what prism measured on this machine the first time a decision
// needed it, kept per CPU in the user's cache folder (FFTW's wisdom).
//
// Some of prism's choices cannot be read off the CPU's features or sizes with certainty:
// which of its leaf libraries' kernel sets is fastest here, which library suits each class
// of large leaf, and where its own streaming kernels overtake the BLAS leaves. `prism tune`
// measures all of it (a minute; the thresholds written to the machine file, the library
// choices kept here). Without that file (or a value it does not list: a file from before that
// key) prism measures the few things a decision needs the first time it needs them,
// briefly, and keeps the answers in
//
//     $XDG_CACHE_HOME/prism/first-use-HASH     (else $HOME/.cache/prism/first-use-HASH)
//
// HASH being 16 hex digits of the CPU's identity, so hosts that share a home folder keep
// their own. The file is `key: value` lines under `cpu:` and `version:` lines; a file of
// another CPU or version, or a malformed one, is ignored (and rewritten by the next
// measurement). A folder that cannot be written changes nothing but speed: the answers hold
// for the process, and the next process measures again. PRISM_FIRST_USE=0 turns all of it
// off (no crossovers measured at run time, nothing read or written; the leaf libraries'
// kernel probe runs in each process).
#pragma once

#include <prism/machine.hpp>

#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace prism::detail {

/// This CPU's identity as machine files record it: cpuid vendor, family and model with
/// their extended fields, and the brand string ("" off x86). prism::this_cpu() returns it.
std::string cpu_identity();

/// Says that `path` is about to be written (prism tune): until then, this process reads
/// its absence as the normal case, as for the per-user file, with no warning. Call before
/// the process's description is first read.
void machine_file_to_be_written(const std::string& path);

/// The first-use file of CPU `cpu` in folder `dir`: DIR/first-use-HASH (16 hex digits of
/// FNV-1a over the identity), e.g. ~/.cache/prism/first-use-3f0c9a1b22e4d5c6; "" when
/// `dir` is "".
std::string wisdom_path(const std::string& dir, const std::string& cpu);

/// A set of first-use measurements: key-value pairs held in memory and, where the folder
/// allows, in their file. Thread-safe.
class wisdom {
 public:
  /// The process's set: this CPU's file in the user's cache folder, read on first use;
  /// empty and never written when PRISM_FIRST_USE=0 or there is no cache folder.
  static wisdom& process();

  /// A set kept in `path` for CPU `cpu` (tests; "" keeps it in memory only). Reads the file
  /// when it exists and is this CPU's and this format's, with every machine key's value a
  /// positive number; anything else is ignored (and rewritten by the next keep).
  wisdom(std::string path, std::string cpu);

  /// The value kept for `key`, if any.
  std::optional<std::string> find(const std::string& key) const;

  /// Keeps `key: value` (one line, no newline in either) for this process and writes the
  /// whole file again, merged with what other processes kept since it was read (under a
  /// lock; a temporary file renamed over it, so a reader never sees half of it). Returns
  /// false when the file could not be written: the value then holds for this process only.
  bool keep(const std::string& key, const std::string& value);

  /// keep() for several pairs at once, with one write of the file.
  bool keep(const std::map<std::string, std::string>& pairs);

  /// Every pair, in key order.
  std::map<std::string, std::string> all() const;

  /// The file (or "" when kept in memory only).
  const std::string& path() const noexcept { return path_; }

  /// False when PRISM_FIRST_USE=0: nothing is measured at run time or read or written.
  bool enabled() const noexcept { return enabled_; }

 private:
  mutable std::mutex mutex_;
  std::string path_, cpu_;
  bool enabled_ = true;
  std::map<std::string, std::string> values_;
};

/// A machine value as text that reads back as the same double: 12 significant digits, or 17
/// where 12 would not (e.g. 1/3: 0.33333333333333331).
std::string value_text(double v);

/// A machine value read from text: a positive finite number that is all of the text, or none.
std::optional<double> positive_value(const std::string& text);

/// The first-use value of machine key k in the process's set (0 when none): read lock-free
/// after the first call, for the machine description's value().
double first_use_value(machine_key k) noexcept;

/// Sets first-use values for this process and keeps them, with the `extra` pairs, in the
/// process's set (one write of the file); a value of 0 is skipped. Returns wisdom::keep's
/// result.
bool keep_first_use_values(const std::map<machine_key, double>& values,
                           const std::map<std::string, std::string>& extra = {});

/// True once every key in `keys` has a first-use value in this process.
bool first_use_known(std::initializer_list<machine_key> keys) noexcept;

}  // namespace prism::detail
