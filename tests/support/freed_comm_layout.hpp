// tests/support/freed_comm_layout.hpp — a prism::dist layout whose library duplicate of a
// communicator only it and a matrix on it hold (the user's communicator already freed), to
// see when and where that duplicate is freed. Includes live_dups.hpp (one source file of a
// test executable).
#pragma once

#include <prism/dist.hpp>

#include "live_dups.hpp"

#include <memory>
#include <stdexcept>

namespace prism::test {

/// A layout of p made on a user's duplicate of MPI_COMM_WORLD that is freed at once (the
/// library's cache lets go of it), a matrix on it, and the library's duplicate: the layout
/// and the matrix are its last holders. A layout of p on MPI_COMM_WORLD is made first, so
/// that a later call there makes no duplicate of its own.
struct layout_on_freed_comm {
  std::shared_ptr<const prism::dist::layout> layout;
  std::unique_ptr<prism::dist::matrix<double>> matrix;
  MPI_Comm dup = MPI_COMM_NULL;

  /// Makes them (collective).
  layout_on_freed_comm(const prism::problem& p, const prism::context& ctx) {
    prism::dist::layout::make(MPI_COMM_WORLD, p, ctx);
    MPI_Comm comm = MPI_COMM_NULL;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) throw std::runtime_error("PMPI_Comm_dup");  // the user's, uncounted
    layout = prism::dist::layout::make(comm, p, ctx);
    dup = live_dups.back();
    matrix = std::make_unique<prism::dist::matrix<double>>(layout, prism::operand::a);
    PMPI_Comm_free(&comm);
  }
};

}  // namespace prism::test
