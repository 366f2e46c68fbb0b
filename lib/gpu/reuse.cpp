// lib/gpu/reuse.cpp — the streams and pinned buffers devices' calls reuse (reuse.hpp).
#include "reuse.hpp"

#include <map>
#include <mutex>
#include <vector>

namespace prism::detail::gpu {

namespace {

// What devices keep, under one lock (borrowing is a few per call, next to milliseconds of
// device work).
struct kept {
  std::mutex m;
  std::map<device*, std::vector<stream*>> streams;
  std::map<void*, std::size_t> sizes;                           // every pinned buffer lent or kept: its bytes
  std::map<device*, std::multimap<std::size_t, void*>> pinned;  // kept ones by size
  std::map<device*, std::size_t> pinned_bytes;                  // bytes kept per device
};

kept& the_kept() {
  static kept* k = new kept;  // never freed: see reuse.hpp
  return *k;
}

}  // namespace

void stream_return::operator()(stream* s) const noexcept {
  if (s == nullptr) return;
  device& dev = s->owner();
  bool clean = true;
  try {
    dev.synchronize(*s);
  } catch (...) {
    clean = false;  // a stream that failed is not lent again
  }
  if (clean) try {
      kept& k = the_kept();
      const std::lock_guard<std::mutex> lock(k.m);
      k.streams[&dev].push_back(s);
      return;
    } catch (...) {  // no memory to keep it: free it
    }
  delete s;
}

borrowed_stream borrow_stream(device& dev) {
  kept& k = the_kept();
  {
    const std::lock_guard<std::mutex> lock(k.m);
    std::vector<stream*>& idle = k.streams[&dev];
    if (!idle.empty()) {
      stream* s = idle.back();
      idle.pop_back();
      return borrowed_stream(s);
    }
  }
  return borrowed_stream(dev.make_stream().release());
}

void* borrow_pinned(device& dev, std::size_t bytes) {
  kept& k = the_kept();
  {
    const std::lock_guard<std::mutex> lock(k.m);
    auto& idle = k.pinned[&dev];
    if (auto it = idle.lower_bound(bytes); it != idle.end() && it->first <= 4 * bytes) {  // not a huge one for a small need
      void* p = it->second;
      k.pinned_bytes[&dev] -= it->first;
      idle.erase(it);
      return p;
    }
  }
  void* p = dev.allocate_pinned(bytes);
  try {
    const std::lock_guard<std::mutex> lock(k.m);
    k.sizes[p] = bytes;
  } catch (...) {
    dev.release_pinned(p);
    throw;
  }
  return p;
}

void give_back_pinned(device& dev, void* p) noexcept {
  if (p == nullptr) return;
  kept& k = the_kept();
  try {
    const std::lock_guard<std::mutex> lock(k.m);
    const std::size_t bytes = k.sizes.at(p);
    if (k.pinned_bytes[&dev] + bytes <= pinned_kept_bytes) {
      k.pinned[&dev].emplace(bytes, p);
      k.pinned_bytes[&dev] += bytes;
      return;
    }
    k.sizes.erase(p);
  } catch (...) {  // not one of ours, or no memory to keep it: free it
  }
  dev.release_pinned(p);
}

void forget_kept(device& dev) noexcept {
  std::vector<stream*> streams;
  std::multimap<std::size_t, void*> pinned;
  {
    kept& k = the_kept();
    const std::lock_guard<std::mutex> lock(k.m);
    if (auto it = k.streams.find(&dev); it != k.streams.end()) streams.swap(it->second), k.streams.erase(it);
    if (auto it = k.pinned.find(&dev); it != k.pinned.end()) pinned.swap(it->second), k.pinned.erase(it);
    k.pinned_bytes.erase(&dev);
    for (const auto& [bytes, p] : pinned) k.sizes.erase(p);
  }
  for (stream* s : streams) delete s;  // outside the lock: an emulated stream joins its worker
  for (const auto& [bytes, p] : pinned) dev.release_pinned(p);
}

}  // namespace prism::detail::gpu
