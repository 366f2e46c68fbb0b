// lib/dropin/backend.cpp — locating and opening the user's BLAS (see backend.hpp).
#include "backend.hpp"

#include "../environment/environment.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace prism::dropin {

namespace {

#if PRISM_BLAS_ILP64
constexpr const char* default_soname = "libblas64.so.3";
#else
constexpr const char* default_soname = "libblas.so.3";
#endif

// Base address of this shared object, to recognise (and refuse) prism's own symbols.
const void* own_base() {
  Dl_info info{};
  ::dladdr(reinterpret_cast<const void*>(&own_base), &info);
  return info.dli_fbase;
}

}  // namespace

void* backend::symbol(const char* name) const noexcept {
  void* f = ::dlsym(handle_, name);
  Dl_info info{};
  if (f == nullptr || (::dladdr(f, &info) != 0 && info.dli_fbase == own_base())) return nullptr;
  return f;
}

// Friend of backend: the only place that constructs one.
struct backend_loader {
  static std::unique_ptr<backend> open(const std::string& path, const char* origin, std::string& why) {
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      why = e ? e : "dlopen failed";
      return nullptr;
    }
    std::unique_ptr<backend> b(new backend(path, origin, h));
    const char* names[4] = {"sgemm_", "dgemm_", "cgemm_", "zgemm_"};
    for (int i = 0; i < 4; ++i) {
      b->gemm_[i] = ::dlsym(h, names[i]);
      Dl_info info{};
      if (b->gemm_[i] == nullptr) {
        why = path + " has no " + names[i];
        ::dlclose(h);
        return nullptr;
      }
      // A backend whose ?gemm_ is prism's own would recurse forever.
      if (::dladdr(b->gemm_[i], &info) != 0 && info.dli_fbase == own_base()) {
        why = path + " is prism's own library (its " + names[i] + " is prism's)";
        ::dlclose(h);
        return nullptr;
      }
    }
    // The CBLAS entry points are optional (all four or none); none of them may be prism's.
    const char* cnames[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
    void* c[4] = {};
    bool all = true;
    for (int i = 0; i < 4; ++i) {
      c[i] = ::dlsym(h, cnames[i]);
      Dl_info info{};
      all = all && c[i] != nullptr && !(::dladdr(c[i], &info) != 0 && info.dli_fbase == own_base());
    }
    if (all)
      for (int i = 0; i < 4; ++i) b->cblas_[i] = c[i];
    return b;
  }

  static std::unique_ptr<backend> find() {
    std::string why;
    if (const std::string& named = detail::process_environment().blas_backend; !named.empty()) {
      const char* env = named.c_str();
      if (auto b = open(env, "PRISM_BLAS_BACKEND", why)) return b;
      std::fprintf(stderr, "prism: PRISM_BLAS_BACKEND: '%s' cannot be used: %s; prism computes every call itself\n",
                   env, why.c_str());
      return nullptr;  // an explicit choice that fails is not silently replaced
    }
    // The next dgemm_ after prism in the global lookup order, if it lives in a shared
    // library (not the executable itself, which dlopen cannot open). Not for the ILP64
    // library: a dgemm_ found this way may well be an LP64 one, and nothing tells them apart.
    if (void* next = PRISM_BLAS_ILP64 ? nullptr : ::dlsym(RTLD_NEXT, "dgemm_")) {
      Dl_info info{};
      Dl_info self{};
      ::dladdr(reinterpret_cast<const void*>(&own_base), &self);
      if (::dladdr(next, &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] != '\0' &&
          info.dli_fbase != self.dli_fbase) {
        // dlopen of the name returns the copy already loaded. If dgemm_ lives in the
        // executable itself, dlopen refuses it and the default below applies.
        if (auto b = open(info.dli_fname, "link order", why)) return b;
      }
    }
    if (auto b = open(default_soname, "default", why)) return b;
    std::fprintf(stderr,
                 "prism: no backend BLAS (%s: %s); prism computes every call itself, small ones included "
                 "(PRISM_BLAS_BACKEND names your BLAS)\n",
                 default_soname, why.c_str());
    return nullptr;
  }
};

backend::backend(std::string path, const char* origin, void* handle)
    : path_(std::move(path)), origin_(origin), handle_(handle) {}

int backend::threads() const noexcept {
  if (auto* f = reinterpret_cast<int (*)()>(::dlsym(handle_, "openblas_get_num_threads"))) return f();
  if (auto* f = reinterpret_cast<long (*)()>(::dlsym(handle_, "bli_thread_get_num_threads"))) return int(f());
  if (auto* f = reinterpret_cast<int (*)()>(::dlsym(handle_, "MKL_Get_Max_Threads"))) return f();
  return 0;
}

std::string backend::kernel_name() const {
  if (auto* f = reinterpret_cast<char* (*)()>(::dlsym(handle_, "openblas_get_corename"))) return f();
  auto* query = reinterpret_cast<int (*)()>(::dlsym(handle_, "bli_arch_query_id"));
  auto* name = reinterpret_cast<const char* (*)(int)>(::dlsym(handle_, "bli_arch_string"));
  if (query == nullptr || name == nullptr) return "";
  // BLIS chooses its configuration in bli_init, which its first call would run anyway (with
  // the host's environment); its query aborts before it.
  if (auto* init = reinterpret_cast<void (*)()>(::dlsym(handle_, "bli_init"))) init();
  return name(query());
}

namespace {
std::atomic<const backend*> opened{nullptr};
std::atomic<bool> lookup_begun{false};  // set before get()'s one-time lookup is entered
}

const backend* backend::loaded() noexcept { return opened.load(std::memory_order_acquire); }

const backend* backend::in_forked_child() noexcept {
  if (const backend* b = loaded()) return b;
  // A parent's thread inside the lookup would have left its guard held in this child.
  return lookup_begun.load(std::memory_order_acquire) ? nullptr : get();
}

const backend* backend::get() noexcept {
  if (!lookup_begun.load(std::memory_order_relaxed)) lookup_begun.store(true, std::memory_order_release);
  // Magic static: found once, thread-safe. Deliberately never freed: the PRISM_STATS
  // summary at exit still names it, and the library stays loaded for the process lifetime.
  static const backend* const b = [] {
    try {
      const backend* found = backend_loader::find().release();
      opened.store(found, std::memory_order_release);
      return found;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "prism: WARNING: backend BLAS lookup failed: %s\n", e.what());
      return static_cast<const backend*>(nullptr);
    }
  }();
  return b;
}

}  // namespace prism::dropin
