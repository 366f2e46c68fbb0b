// prism/version.hpp — library version.
#pragma once

namespace prism {

/// The library version as "major.minor.patch".
const char* version() noexcept;

}  // namespace prism
