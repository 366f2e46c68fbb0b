// lib/types/types.cpp — the vocabulary every level speaks (<prism/types.hpp>, with the
// errors of <prism/error.hpp>): the names of operations, operands and leaf backends. The
// ground floor of lib/: it includes nothing of lib/.
#include <prism/error.hpp>
#include <prism/types.hpp>

#include <string>

namespace prism {

const char* to_string(operation o) {
  return o == operation::gemm ? "gemm" : o == operation::syrk ? "syrk" : "herk";
}

const char* to_string(operand o) {
  switch (o) {
    case operand::a: return "A";
    case operand::b: return "B";
    case operand::c: return "C";
  }
  return "?";
}

leaf_backend parse_leaf_backend(const std::string& text) {
  if (text == "openblas") return leaf_backend::openblas;
  if (text == "blis") return leaf_backend::blis;
  if (text == "streaming") return leaf_backend::streaming;
  if (text == "auto") return leaf_backend::automatic;
  throw error("unknown leaf backend '" + text + "' (expected openblas, blis, streaming or auto)");
}

const char* to_string(leaf_backend b) {
  switch (b) {
    case leaf_backend::openblas: return "openblas";
    case leaf_backend::blis: return "blis";
    case leaf_backend::streaming: return "streaming";
    case leaf_backend::automatic: return "auto";
    case leaf_backend::gpu: return "gpu";
  }
  return "?";
}

}  // namespace prism
