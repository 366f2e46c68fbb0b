// lib/runtime/lru_cache.hpp — a map of at most `capacity` entries that forgets the least
// recently used one when full: the bound on prism's per-signature caches (the rank
// level's layouts per communicator, the ScaLAPACK drop-in's plans), so that a program
// calling with ever new shapes does not grow without limit. Not thread-safe; callers
// that share one lock it. Processes that make the same calls in the same order keep the
// same entries, so collective callers stay in step.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <utility>

namespace prism::detail {

template <class K, class V>
class lru_cache {
 public:
  /// A cache of at most `capacity` (>= 1) entries.
  explicit lru_cache(std::size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  /// The value under k, now the most recently used, or nullptr.
  V* find(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  /// Stores v under k (replacing any), most recently used; forgets the least recently used
  /// entry when that makes more than `capacity`.
  void put(const K& k, V v) {
    if (V* have = find(k)) {
      *have = std::move(v);
      return;
    }
    order_.emplace_front(k, std::move(v));
    index_.emplace(k, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  /// Entries held.
  std::size_t size() const noexcept { return order_.size(); }
  /// The most entries it holds.
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::size_t capacity_;
  std::list<std::pair<K, V>> order_;  // most recently used first
  std::map<K, typename std::list<std::pair<K, V>>::iterator> index_;
};

}  // namespace prism::detail
