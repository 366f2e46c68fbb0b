// prism/prism.hpp — umbrella header: everything a user of prism needs.
#pragma once

#include <prism/bounds.hpp>
#include <prism/context.hpp>
#include <prism/error.hpp>
#include <prism/gemm.hpp>
#include <prism/gpu.hpp>
#include <prism/machine.hpp>
#include <prism/placement.hpp>
#include <prism/plan.hpp>
#include <prism/rank_model.hpp>
#include <prism/syrk.hpp>
#include <prism/topology.hpp>
#include <prism/traffic.hpp>
#include <prism/types.hpp>
#include <prism/version.hpp>
