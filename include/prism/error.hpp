// prism/error.hpp — typed errors thrown by the C++ API.
#pragma once

#include <stdexcept>
#include <string>

namespace prism {

/// Base class of every exception prism throws.
class error : public std::runtime_error {
 public:
  /// Wraps a human-readable message.
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

/// A gemm argument violates the BLAS contract; names the argument and its BLAS position.
class invalid_argument : public error {
 public:
  /// `name` is the BLAS argument name (e.g. "lda"), `position` its 1-based place in ?gemm.
  invalid_argument(std::string routine, std::string name, int position, const std::string& why)
      : error(routine + ": argument " + std::to_string(position) + " (" + name + ") " + why),
        routine_(std::move(routine)), name_(std::move(name)), position_(position) {}
  /// Routine that rejected the call, e.g. "dgemm".
  const std::string& routine() const noexcept { return routine_; }
  /// Argument name as in the reference BLAS, e.g. "transa", "lda".
  const std::string& name() const noexcept { return name_; }
  /// 1-based argument position as reference BLAS passes it to xerbla.
  int position() const noexcept { return position_; }

 private:
  std::string routine_;
  std::string name_;
  int position_;
};

/// A plan's text could not be parsed, or a plan is inconsistent with itself or with a call.
class plan_error : public error {
 public:
  /// Wraps the reason.
  explicit plan_error(const std::string& what) : error("prism plan: " + what), reason_(what) {}
  /// The reason alone, without the "prism plan: " that what() puts before it.
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

/// A leaf BLAS backend could not be loaded or lacks a symbol.
class backend_error : public error {
 public:
  /// Wraps the reason.
  explicit backend_error(const std::string& what) : error("prism backend: " + what) {}
};

}  // namespace prism
