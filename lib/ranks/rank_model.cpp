// lib/ranks/rank_model.cpp — prism::rank_model, the public face of a schedule (schedule.hpp),
// and predict_levels: the local levels (lib/bounds) and the rank level's entry on top.
#include <prism/rank_model.hpp>
#include <prism/traffic.hpp>

#include "../bounds/levels.hpp"
#include "tree_schedule.hpp"
#include "triangle_schedule.hpp"

#include <prism/error.hpp>

#include <algorithm>

namespace prism {

rank_model::rank_model(const plan& p) : s_(ranks::gemm_schedule(p)) {}

rank_model::rank_model(const prism::problem& p, const rank_k_scheme& s) {
  if (p.op == operation::gemm) throw plan_error("a gemm problem has no triangle to spread by a scheme (use its plan)");
  s_ = ranks::rank_k_schedule(p, s);
}

const problem& rank_model::problem() const noexcept { return s_->product(); }

const plan& rank_model::source() const noexcept {
  static const plan none;
  const auto* t = dynamic_cast<const ranks::tree_schedule*>(s_.get());
  return t != nullptr ? t->source() : none;
}

const rank_k_scheme& rank_model::scheme() const noexcept {
  static const rank_k_scheme none;
  const auto* t = dynamic_cast<const ranks::triangle_schedule*>(s_.get());
  return t != nullptr ? t->scheme() : none;
}

int rank_model::ranks() const noexcept { return s_->ranks(); }
int rank_model::phases() const noexcept { return s_->phases(); }
std::string rank_model::grid() const { return s_->describe(); }
const rank_cost& rank_model::cost(int r) const { return s_->cost(r); }
std::int64_t rank_model::messages(int r) const { return s_->messages(r); }
std::int64_t rank_model::local_size(operand o, int r) const { return s_->local_size(o, r); }

namespace {
// The largest of f(cost) over the ranks.
template <class F>
auto most(const ranks::schedule& s, F&& f) {
  decltype(f(rank_cost{})) m = 0;
  for (const rank_cost& c : s.costs()) m = std::max(m, f(c));
  return m;
}
// The mean of f(cost) over the ranks (0 on none).
template <class F>
double mean(const ranks::schedule& s, F&& f) {
  double sum = 0;
  for (const rank_cost& c : s.costs()) sum += f(c);
  return s.ranks() > 0 ? sum / double(s.ranks()) : 0;
}
}  // namespace

std::int64_t rank_model::max_received() const { return most(*s_, [](const rank_cost& c) { return c.received_total(); }); }
double rank_model::mean_received() const { return mean(*s_, [](const rank_cost& c) { return double(c.received_total()); }); }
std::size_t rank_model::max_peak_bytes() const { return most(*s_, [](const rank_cost& c) { return c.peak_bytes(); }); }
double rank_model::max_flops() const { return most(*s_, [](const rank_cost& c) { return c.flops; }); }
double rank_model::mean_flops() const { return mean(*s_, [](const rank_cost& c) { return c.flops; }); }

namespace ranks {
/// The schedule a rank model holds (its friend).
struct model_access {
  static const schedule& of(const rank_model& m) { return *m.s_; }
};

const schedule& schedule_of(const rank_model& m) { return model_access::of(m); }
}  // namespace ranks

std::vector<level_traffic> predict_levels(const plan& p, const topology& machine, double rank_memory_words) {
  std::vector<level_traffic> out = detail::predict_local_levels(p, machine);
  if (p.nodes().empty() || p.ranks() == 1) return out;
  const problem& pr = p.problem();
  level_traffic l;
  l.level = "ranks";
  l.capacity = rank_memory_words;
  l.predicted = double(rank_model(p).max_received());
  l.bound = bounds::parallel_io_minus_owned(pr.m, pr.n, pr.k, p.ranks(), rank_memory_words);
  l.note = "busiest rank's received elements (rank_model); bound: parallel_io_minus_owned over " +
           std::to_string(p.ranks()) + " ranks";
  out.push_back(l);
  return out;
}

}  // namespace prism
