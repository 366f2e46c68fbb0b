// lib/numa/traffic.cpp — the cross-domain traffic model of prism/traffic.hpp.
#include <prism/error.hpp>
#include <prism/traffic.hpp>

#include <functional>
#include <numeric>

namespace prism {

double traffic_report::remote_total() const { return std::accumulate(remote_bytes.begin(), remote_bytes.end(), 0.0); }
double traffic_report::local_total() const { return std::accumulate(local_bytes.begin(), local_bytes.end(), 0.0); }

// Walks the numa-level part of the tree carrying, for each of A, B and C, the span of
// domains its current block is spread over. A numa cut narrows the spans of the matrices
// it partitions to the part's domains (prism placement) or leaves every span as all
// domains (interleaved). Worked example, 64 x 64 x K doubles on 4 domains, prism
// placement, k cut 2:2 then 1:1: every domain's A and B slabs are its own, C blocks too
// (the first part owns C, the others write a local C'); the only remote reads are the
// three 32768-byte C' reductions, each by the first domain of the part that owns C, as
// the executor runs them: domain 2 reads domain 3's C' into its own, then domain 0 reads
// domain 1's and domain 2's: 65536, 0, 32768, 0 bytes.
traffic_report predict_traffic(const plan& p, placement where) {
  if (p.problem().op != operation::gemm)
    throw plan_error(std::string("predict_traffic: models gemm plans; this one is a ") + to_string(p.problem().op) + " plan");
  if (p.ranks() > 1) throw plan_error("predict_traffic: cross-domain traffic is per rank; this plan spans ranks");
  const int D = p.domains();
  traffic_report r;
  r.local_bytes.assign(std::size_t(D), 0.0);
  r.remote_bytes.assign(std::size_t(D), 0.0);
  const double elem = double(element_size(p.problem().type));
  const bool narrow = where == placement::prism;
  const auto& nodes = p.nodes();

  // Charges `bytes` read by domain d of a block spread over `s`.
  auto read = [&](int d, double bytes, span s) {
    const double local = s.contains(d) ? bytes / s.count : 0.0;
    r.local_bytes[std::size_t(d)] += local;
    r.remote_bytes[std::size_t(d)] += bytes - local;
  };

  std::function<void(int, span, span, span)> walk = [&](int i, span a, span b, span c) {
    const node& nd = nodes[std::size_t(i)];
    const box& x = nd.shape;
    if (nd.owns.domains.count == 1) {  // one domain from here down: it reads its blocks once
      const int d = nd.owns.domains.first;
      read(d, elem * double(x.m) * double(x.k), a);
      read(d, elem * double(x.k) * double(x.n), b);
      read(d, elem * double(x.m) * double(x.n), c);
      return;
    }
    const bool temporaries = nd.kind == step_kind::bfs && nd.cut == dim::k;
    const span owner = nodes[std::size_t(nd.children[0])].owns.domains;
    for (std::size_t c_i = 0; c_i < nd.children.size(); ++c_i) {
      const node& child = nodes[std::size_t(nd.children[c_i])];
      const span mine = child.owns.domains;
      span ca = a, cb = b, cc = c;
      if (narrow) {
        if (nd.cut == dim::m) ca = mine, cc = mine;
        else if (nd.cut == dim::n) cb = mine, cc = mine;
        else ca = mine, cb = mine, cc = mine;  // k: slabs of A and B; C (part 0) or a local C'
      } else if (temporaries && c_i > 0) {
        cc = mine;  // a temporary C' is always allocated where it is computed
      }
      walk(nd.children[c_i], ca, cb, cc);
      if (temporaries && c_i > 0)  // C's owner reduces this part's C' in its first domain (numa_runner)
        read(owner.first, elem * double(x.m) * double(x.n), mine);
    }
  };
  const span all{0, D};
  walk(0, all, all, all);
  return r;
}

}  // namespace prism
