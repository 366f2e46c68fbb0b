// lib/leaf/backend/blas_library.cpp — private dlopen of BLAS builds, CBLAS gemm dispatch, leaf rule.
#include "blas_library.hpp"

#include <prism/error.hpp>

#include "blis_expert.hpp"

#include "../../environment/run_once.hpp"
#include "../../machine/wisdom.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cctype>
#include <initializer_list>
#include <map>
#include <memory>
#include <vector>

#if defined(__has_feature)  // clang names its sanitizers this way, gcc with __SANITIZE_*__
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PRISM_SANITIZER_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(PRISM_SANITIZER_BUILD)
#define PRISM_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#else
#define PRISM_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
#endif

namespace prism::detail {

namespace {

// CBLAS enumerators (cblas.h): they are plain ints in every implementation's ABI.
constexpr int cblas_col_major = 102;
int cblas_trans(char t) { return t == 'N' ? 111 : t == 'T' ? 112 : 113; }

// cblas_?gemm with integer type I (int for LP64 builds, int64 for ILP64 ones); the
// layout and trans enumerators stay plain ints in both.
template <class I, class T>
using gemm_fn = void (*)(int, int, int, I, I, I, T, const T*, I, const T*, I, T, T*, I);
template <class I>
using complex_gemm_fn = void (*)(int, int, int, I, I, I, const void*, const void*, I, const void*,
                                 I, const void*, void*, I);

template <class I, class T>
void call_gemm(void* const* table, int ta, int tb, std::int64_t m, std::int64_t n, std::int64_t k,
               T alpha, const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
               std::int64_t ldc) {
  if constexpr (std::same_as<T, float> || std::same_as<T, double>)
    reinterpret_cast<gemm_fn<I, T>>(table[std::same_as<T, float> ? 0 : 1])(
        cblas_col_major, ta, tb, I(m), I(n), I(k), alpha, A, I(lda), B, I(ldb), beta, C, I(ldc));
  else
    reinterpret_cast<complex_gemm_fn<I>>(table[std::same_as<T, std::complex<float>> ? 2 : 3])(
        cblas_col_major, ta, tb, I(m), I(n), I(k), &alpha, A, I(lda), B, I(ldb), &beta, C, I(ldc));
}

}  // namespace

const char* to_string(blas_build b) {
  switch (b) {
    case blas_build::openblas_serial: return "openblas-serial";
    case blas_build::openblas_pthread: return "openblas-pthread";
    case blas_build::openblas64_pthread: return "openblas64-pthread";
    case blas_build::blis_serial: return "blis-serial";
    case blas_build::blis_pthread: return "blis-pthread";
  }
  return "?";
}

std::string library_path(blas_build b) {
  const environment& env = process_environment();
  const std::string* set = nullptr;
  const char* built = nullptr;
  switch (b) {
    case blas_build::openblas_serial: set = &env.lib_openblas_serial; built = PRISM_OPENBLAS_SERIAL_PATH; break;
    case blas_build::openblas_pthread: set = &env.lib_openblas_pthread; built = PRISM_OPENBLAS_PTHREAD_PATH; break;
    case blas_build::openblas64_pthread: set = &env.lib_openblas64_pthread; built = PRISM_OPENBLAS64_PTHREAD_PATH; break;
    case blas_build::blis_serial: set = &env.lib_blis_serial; built = PRISM_BLIS_SERIAL_PATH; break;
    case blas_build::blis_pthread: set = &env.lib_blis_pthread; built = PRISM_BLIS_PTHREAD_PATH; break;
  }
  if (set != nullptr && !set->empty()) return *set;
  return built;
}

namespace {
// True when the process has already loaded the file at `path` (glibc compares files, not
// names, so a symlink to it counts).
bool file_loaded(const std::string& path) {
  if (void* already = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(already);
    return true;
  }
  return false;
}
}  // namespace

blas_library::blas_library(const std::string& path, bool ilp64,
                           const std::vector<std::pair<const char*, const char*>>& load_env)
    : path_(path), ilp64_(ilp64) {
  shared_ = file_loaded(path);
  {
    // The environment prism asks for holds while the library's constructors run (OpenBLAS
    // picks its core type there) and while BLIS initialises (it reads BLIS_ARCH_TYPE once,
    // at bli_init); the destructor of `env` restores the host's values. A copy the host
    // loaded first keeps the host's choice: nothing is set for it.
    std::unique_ptr<scoped_env> env;
    if (!load_env.empty() && !shared_) env = std::make_unique<scoped_env>(load_env);
    handle_ = ::dlopen(path.c_str(), PRISM_DLOPEN_FLAGS);
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      throw backend_error("cannot open '" + path + "': " + (why ? why : "unknown error"));
    }
    blis_ = symbol("bli_init") != nullptr;
    if (env != nullptr)
      if (auto* init = reinterpret_cast<void (*)()>(symbol("bli_init"))) {
        init();
        if (auto* query = reinterpret_cast<int (*)()>(symbol("bli_arch_query_id"))) (void)query();
      }
  }
  const char* names[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
  for (int i = 0; i < 4; ++i) {
    gemm_[i] = ::dlsym(handle_, names[i]);
    if (gemm_[i] == nullptr) {
      ::dlclose(handle_);
      throw backend_error("'" + path + "' has no " + names[i]);
    }
  }
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) {
    if (!s.empty()) s += ' ';
    s += x;
  }
  return s;
}

// "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512": the forcing variables the host set.
std::string host_values(std::initializer_list<const char*> names) {
  std::string s;
  for (const char* n : names)
    if (const char* v = backend_variable(n)) {
      if (!s.empty()) s += ' ';
      s.append(n).append("=").append(v);
    }
  return s;
}

// Why the features pick `name`, in a few words.
std::string feature_reason(const std::string& name, const cpu_features& cpu) {
  if (name == "SapphireRapids") return "the CPU has AVX-512 F/BW/DQ/VL/CD, AVX512_BF16, AVX512_FP16 and AMX";
  if (name == "Cooperlake") return "the CPU has AVX-512 F/BW/DQ/VL/CD and AVX512_BF16";
  if (name == "SkylakeX" || name == "skx" || name == "zen4" || name == "zen5") return "the CPU has AVX-512 F/BW/DQ/VL/CD";
  if (name == "Zen" || name.rfind("zen", 0) == 0) return std::string(cpu.amd ? "an AMD CPU" : "a CPU") + " with AVX2 and FMA";
  if (name == "Haswell" || name == "haswell") return "the CPU has AVX2 and FMA";
  if (name == "Sandybridge" || name == "sandybridge") return "the CPU has AVX";
  return "";
}
}  // namespace

// Loads prism's two leaf builds with the kernel set prism chooses (leaf_kernels.hpp).
struct leaf_loader {
  // OpenBLAS picks its core type in its library constructor, from OPENBLAS_CORETYPE if set
  // (OPENBLAS_L2_SIZE also feeds its block sizes in releases after 0.3.21): so prism sets
  // the one and removes the other for the dlopen of its own copy, then restores both.
  static blas_library* openblas(const std::string& path) {
    auto choice = std::make_unique<kernel_choice>();
    const kernel_request& req = leaf_kernels_from_env().openblas;
    const cpu_features& cpu = this_cpu();
    const std::vector<std::string> candidates = openblas_core_candidates(cpu);
    choice->request = to_string(req);
    choice->candidates = join(candidates);
    choice->interface = "cblas";
    const bool shared = file_loaded(path);
    std::vector<std::pair<const char*, const char*>> env;
    kernel_request::how mode = req.mode;
    if (mode == kernel_request::how::named && !cpu_runs(cpu, "openblas", req.name)) {
      choice->note = "PRISM_LEAF_KERNELS asks for " + req.name + ", which this CPU cannot run; chose by its features";
      mode = kernel_request::how::automatic;
    }
    if (mode == kernel_request::how::automatic && candidates.empty()) {
      mode = kernel_request::how::detect;
      choice->why = "the CPU has no AVX: OpenBLAS's own detection";
    }
    switch (mode) {
      case kernel_request::how::host:
        choice->why = "PRISM_LEAF_KERNELS=openblas=host: the process environment decides";
        break;
      case kernel_request::how::detect:
        env = {{"OPENBLAS_CORETYPE", nullptr}, {"OPENBLAS_L2_SIZE", nullptr}};
        if (choice->why.empty()) choice->why = "PRISM_LEAF_KERNELS=openblas=detect: OpenBLAS's own detection";
        break;
      case kernel_request::how::named:
        choice->chosen = req.name;
        choice->why = "PRISM_LEAF_KERNELS=openblas=" + req.name;
        break;
      case kernel_request::how::automatic:
        choice->chosen = candidates.front();
        choice->why = feature_reason(choice->chosen, cpu);
        if (const auto kept = wisdom::process().find("openblas_kernels");
            kept && std::find(candidates.begin(), candidates.end(), *kept) != candidates.end())
          choice->chosen = *kept;  // the probe's verdict of an earlier process (choose_openblas checks it)
        break;
    }
    if (!choice->chosen.empty()) env = {{"OPENBLAS_CORETYPE", choice->chosen.c_str()}, {"OPENBLAS_L2_SIZE", nullptr}};
    if (mode != kernel_request::how::host) choice->environment = host_values({"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"});
    if (shared) {
      choice->note = "the host loaded this file first: its kernels are the host's, prism changes nothing";
      choice->chosen.clear();
    }
    auto* lib = new blas_library(path, true, env);
    // Leaves run single-threaded; a copy shared with the host is left alone (leaf_library
    // then avoids it). A single-threaded copy never uses the worker pool OpenBLAS starts
    // when it loads, so prism stops it (blas_thread_shutdown_, what OpenBLAS itself does
    // in a forked child): nproc - 1 fewer idle threads in the process, and no worker that
    // could read the kernel table while choose_openblas swaps it.
    if (!shared) {
      lib->set_threads(1);
      if (auto* stop = reinterpret_cast<int (*)()>(lib->symbol("blas_thread_shutdown_"))) {
        (void)stop();
        lib->pool_stopped_ = true;
      }
    }
    choice->running = lib->kernel_name();
    if (!shared && mode == kernel_request::how::automatic) choose_openblas(*lib, *choice, candidates);
    if (!choice->chosen.empty() && choice->running != choice->chosen)
      choice->note += (choice->note.empty() ? "" : "; ") + std::string("asked for ") + choice->chosen +
                      ", OpenBLAS runs " + choice->running;
    lib->kernels_ = std::move(choice);
    return lib;
  }

  // Chooses among the OpenBLAS sets this CPU runs and this file carries, where the order is
  // not certain from the features (leaf_kernels.hpp: classes 4 and 3), by timing each on a
  // short probe, and keeps the verdict for this CPU (lib/machine/wisdom.hpp): the next process loads
  // the winner directly. OpenBLAS re-selects its core type when gotoblas_dynamic_quit() and
  // gotoblas_dynamic_init() run again (exported by its DYNAMIC_ARCH builds; they only swap
  // the kernel table and its block sizes), so every set is timed in prism's one copy, before
  // any leaf runs. Example, this project's AMD EPYC with Debian's 0.3.21 (no SapphireRapids):
  // Cooperlake, SkylakeX, Zen and Haswell are timed, 20 ms; OpenBLAS's own detection
  // (Cooperlake) is reported beside them.
  static void choose_openblas(const blas_library& lib, kernel_choice& choice, const std::vector<std::string>& candidates) {
    auto* quit = reinterpret_cast<void (*)()>(lib.symbol("gotoblas_dynamic_quit"));
    auto* init = reinterpret_cast<void (*)()>(lib.symbol("gotoblas_dynamic_init"));
    if (quit == nullptr || init == nullptr) {
      choice.detected = "unknown (no gotoblas_dynamic_init: not a DYNAMIC_ARCH build)";
      return;
    }
    // The swap leaves the table pointer null for a moment: safe only with no OpenBLAS
    // worker thread alive (the pool was stopped above).
    if (!lib.pool_stopped_) {
      choice.detected = "not asked (OpenBLAS's worker pool could not be stopped)";
      return;
    }
    auto select = [&](const char* core) {
      scoped_env env({{"OPENBLAS_CORETYPE", core}, {"OPENBLAS_L2_SIZE", nullptr}});
      quit();
      init();
      return lib.kernel_name();
    };
    // PRISM_TEST_OPENBLAS_DETECTS (tests only: test_leaf_env_disagree) stands in for an
    // OpenBLAS whose own detection differs from the features' choice.
    const std::string& detects = process_environment().test_openblas_detects;
    choice.detected = select(detects.empty() ? nullptr : detects.c_str());
    std::vector<std::string> carried = carried_sets(lib, candidates);
    if (carried.empty()) carried = candidates;  // tables not exported: the probe finds what it takes
    choice.carried = join(carried);
    wisdom& kept = wisdom::process();
    const auto kept_set = kept.find("openblas_kernels"), kept_carried = kept.find("openblas_carried");
    // A kept verdict counts only when the probe could have given it (one of the sets it
    // times, or the first carried one when it times none): another is a damaged file's.
    const std::vector<std::string> group = probe_group(carried);
    const bool probe_could = kept_set && (group.size() < 2 ? !carried.empty() && *kept_set == carried.front()
                                                           : std::find(group.begin(), group.end(), *kept_set) != group.end());
    if (probe_could && kept_carried && *kept_carried == choice.carried && *kept_set == choice.chosen) {
      choice.measured = kept.find("openblas_probe").value_or("") + " (at first use, kept in " + kept.path() + ")";
      choice.why = "measured fastest here at first use";
    } else {
      probe_openblas(lib, choice, carried, select);
    }
    if (select(choice.chosen.c_str()) != choice.chosen)  // a set the file does not carry after all
      choice.note += (choice.note.empty() ? "" : "; ") + std::string("OpenBLAS did not take ") + choice.chosen;
    choice.running = lib.kernel_name();
  }

  // The sets of `candidates` this OpenBLAS file carries (its gotoblas_<NAME> tables).
  static std::vector<std::string> carried_sets(const blas_library& lib, const std::vector<std::string>& candidates) {
    std::vector<std::string> out;
    for (const std::string& c : candidates) {
      std::string table = "gotoblas_" + c;
      std::transform(table.begin() + 9, table.end(), table.begin() + 9, [](unsigned char x) { return char(std::toupper(x)); });
      if (lib.symbol(table.c_str()) != nullptr) out.push_back(c);
    }
    return out;
  }

  // The sets the probe times: those of `carried` in classes 4 and 3 down to one class below
  // the first's, e.g. Cooperlake SkylakeX Zen Haswell of the EPYC's eight (none when fewer
  // than two: then the first carried set is taken untimed).
  static std::vector<std::string> probe_group(const std::vector<std::string>& carried) {
    std::vector<std::string> group;
    const int top = carried.empty() ? 0 : kernel_class(carried.front());
    for (const std::string& c : carried)
      if (kernel_class(c) >= 3 && kernel_class(c) >= top - 1) group.push_back(c);
    return group;
  }

  // Times every carried set of classes 4 and 3 (the order the features leave open) on a
  // d 256^3 probe, best of 5 each (34 Mflop a call, under a millisecond on an AVX2 core or
  // better), and takes the fastest; the features' order decides within 5% (the spread of
  // such short timings on a busy machine). Also records whether 512-bit sets won (BLIS's
  // order follows it) and keeps the verdict for this CPU.
  template <class Select>
  static void probe_openblas(const blas_library& lib, kernel_choice& choice, const std::vector<std::string>& carried,
                             Select&& select) {
    const std::vector<std::string> group = probe_group(carried);
    if (group.size() < 2) {
      if (!carried.empty() && choice.chosen != carried.front()) choice.chosen = carried.front();
      return;
    }
    constexpr std::int64_t probe = 256;
    std::vector<double> rate(group.size());
    std::string text = "d " + std::to_string(probe) + "^3, 1 thread:";
    double best = 0, best_wide = 0, best_narrow = 0;
    for (std::size_t i = 0; i < group.size(); ++i) {
      if (select(group[i].c_str()) != group[i]) continue;  // not taken: rate 0
      rate[i] = lib.measure_gflops(scalar_type::d, probe, probe, probe, 5);
      char part[96];
      std::snprintf(part, sizeof part, "%s %s %.1f GF/s", i == 0 ? "" : ",", group[i].c_str(), rate[i]);
      text += part;
      best = std::max(best, rate[i]);
      (kernel_class(group[i]) == 4 ? best_wide : best_narrow) = std::max(kernel_class(group[i]) == 4 ? best_wide : best_narrow, rate[i]);
    }
    std::size_t pick = 0;
    while (pick + 1 < group.size() && rate[pick] * 1.05 < best) ++pick;
    choice.chosen = group[pick];
    choice.measured = text;
    choice.why = "measured fastest of " + std::to_string(group.size()) + " sets here";
    const bool wide = !(best_narrow > 1.05 * best_wide);
    if (best_wide > 0 && best_narrow > 0) set_wide_vectors_first(wide, false);
    std::map<std::string, std::string> verdict = {
        {"openblas_kernels", choice.chosen}, {"openblas_carried", choice.carried}, {"openblas_probe", text}};
    if (best_wide > 0 && best_narrow > 0) verdict["wide_vectors_first"] = wide ? "1" : "0";
    wisdom::process().keep(verdict);
  }

  // BLIS fixes its configuration once per copy, at initialisation, from BLIS_ARCH_TYPE (an
  // arch_t number) if set, else from cpuid. What prism tried for an explicit context, and
  // why it ends here: BLIS's own way is to look the configuration up in its global kernel
  // structure (bli_gks_lookup_id) or to build a context with bli_cntx_init_<arch>, then pass
  // it to bli_gemm_ex; Debian's libblis.so.4 exports neither, nor the kernels a context
  // could be filled with (nm -D), and bli_gks_query_cntx() only returns the configuration
  // chosen at initialisation. So prism sets BLIS_ARCH_TYPE only around its private copy's
  // bli_init() (then restores the host's value), and calls bli_?gemm_ex with the context
  // that copy initialised (bli_gks_query_cntx) and a runtime pinned to one thread. Forcing
  // a configuration the library did not register makes BLIS abort, so prism forces only
  // those its header lists (BLIS_CONFIG_*), and only for the file CMake found beside it.
  // Whether BLIS's 512-bit configurations go before its 256-bit ones: the OpenBLAS probe's
  // verdict on this CPU (kept from an earlier process, or measured now by loading prism's
  // OpenBLAS leaf first); the features' order (512 first) when BLIS has only one of the two
  // classes here, when its set is named, or when OpenBLAS cannot say.
  static bool wide_order(const cpu_features& cpu, const std::vector<std::string>& registered, const kernel_request& req) {
    const std::vector<std::string> all = blis_arch_candidates(cpu, registered);
    const bool both = std::any_of(all.begin(), all.end(), [](const std::string& n) { return kernel_class(n) == 4; }) &&
                      std::any_of(all.begin(), all.end(), [](const std::string& n) { return kernel_class(n) == 3; });
    if (!both || req.mode != kernel_request::how::automatic) return true;
    if (!wide_vectors_measured()) try {
        (void)blas_library::get(blas_build::openblas64_pthread);  // its probe gives the verdict
      } catch (const backend_error&) {
      }
    return wide_vectors_first();
  }

  static blas_library* blis(const std::string& path, const std::string& built_path) {
    auto choice = std::make_unique<kernel_choice>();
    const kernel_request& req = leaf_kernels_from_env().blis;
    const cpu_features& cpu = this_cpu();
    const bool own_header = path == built_path && blis_expert::available();
    const std::vector<std::string> registered = own_header ? blis_expert::registered_archs() : std::vector<std::string>{};
    const std::vector<std::string> candidates = blis_arch_candidates(cpu, registered, wide_order(cpu, registered, req));
    choice->request = to_string(req);
    choice->candidates = join(candidates);
    choice->detected = "not known in-process (BLIS fixes its configuration once per copy)";
    const bool shared = file_loaded(path);
    kernel_request::how mode = req.mode;
    if (mode == kernel_request::how::named) {
      const bool registered_here = std::find(registered.begin(), registered.end(), req.name) != registered.end();
      if (!cpu_runs(cpu, "blis", req.name)) {
        choice->note = "PRISM_LEAF_KERNELS asks for " + req.name + ", which this CPU cannot run; chose by its features";
        mode = kernel_request::how::automatic;
      } else if (!registered_here && own_header) {
        choice->note = "PRISM_LEAF_KERNELS asks for " + req.name + ", which this BLIS did not register; chose by features";
        mode = kernel_request::how::automatic;
      } else if (blis_expert::arch_id(req.name) < 0) {
        choice->note = "PRISM_LEAF_KERNELS asks for " + req.name + ", but prism was built without <blis.h> and "
                       "cannot number it; chose by features";
        mode = kernel_request::how::automatic;
      }
    }
    if (mode == kernel_request::how::automatic && candidates.empty()) {
      mode = kernel_request::how::detect;
      choice->why = !own_header ? (blis_expert::available()
                                       ? "not the BLIS prism was built with: its configurations are unknown, BLIS's "
                                         "own detection"
                                       : "built without <blis.h>: BLIS's own detection")
                                : "no configuration this CPU runs is registered: BLIS's own detection";
    }
    std::string id_text;
    std::vector<std::pair<const char*, const char*>> env;
    switch (mode) {
      case kernel_request::how::host:
        choice->why = "PRISM_LEAF_KERNELS=blis=host: the process environment decides";
        break;
      case kernel_request::how::detect:
        if (choice->why.empty()) choice->why = "PRISM_LEAF_KERNELS=blis=detect: BLIS's own detection";
        env = {{"BLIS_ARCH_TYPE", nullptr}};
        break;
      case kernel_request::how::named:
        choice->chosen = req.name;
        choice->why = "PRISM_LEAF_KERNELS=blis=" + req.name;
        break;
      case kernel_request::how::automatic:
        choice->chosen = candidates.front();
        choice->why = feature_reason(choice->chosen, cpu);
        if (wide_vectors_measured())
          choice->measured = std::string("512-bit configurations ") + (wide_vectors_first() ? "before" : "after") +
                             " 256-bit ones, as OpenBLAS's probe found on this CPU";
        break;
    }
    if (!choice->chosen.empty()) {
      id_text = std::to_string(blis_expert::arch_id(choice->chosen));
      env = {{"BLIS_ARCH_TYPE", id_text.c_str()}};
    }
    if (mode != kernel_request::how::host) choice->environment = host_values({"BLIS_ARCH_TYPE"});
    if (shared) {
      choice->note = "the host loaded this file first: its configuration is the host's, prism changes nothing";
      choice->chosen.clear();
    }
    auto* lib = new blas_library(path, false, env);
    if (!shared) lib->set_threads(1);
    choice->running = lib->kernel_name();
    if (!choice->chosen.empty() && choice->running != choice->chosen)
      choice->note += (choice->note.empty() ? "" : "; ") + std::string("asked for ") + choice->chosen +
                      ", BLIS runs " + choice->running;
    // The expert interface: every type's bli_?gemm_ex, the copy's context, one thread.
    auto* query_cntx = reinterpret_cast<void* (*)()>(lib->symbol("bli_gks_query_cntx"));
    void* rntm_init = lib->symbol("bli_rntm_init_from_global");
    const char* ex_names[4] = {"bli_sgemm_ex", "bli_dgemm_ex", "bli_cgemm_ex", "bli_zgemm_ex"};
    bool have_ex = blis_expert::available() && query_cntx != nullptr && rntm_init != nullptr;
    for (int i = 0; i < 4 && have_ex; ++i) have_ex = (lib->blis_ex_[i] = lib->symbol(ex_names[i])) != nullptr;
    if (have_ex) {
      const char* rank_k_names[6] = {"bli_ssyrk_ex", "bli_dsyrk_ex", "bli_csyrk_ex", "bli_zsyrk_ex", "bli_cherk_ex", "bli_zherk_ex"};
      for (int i = 0; i < 6; ++i) lib->blis_rank_k_ex_[i] = lib->symbol(rank_k_names[i]);
      lib->blis_cntx_ = query_cntx();
      lib->blis_rntm_ = blis_expert::one_thread_runtime(rntm_init);
      const bool rank_k_ex = std::all_of(std::begin(lib->blis_rank_k_ex_), std::end(lib->blis_rank_k_ex_), [](void* f) { return f != nullptr; });
      choice->interface = std::string(rank_k_ex ? "bli_?gemm_ex, bli_?syrk_ex, bli_?herk_ex" : "bli_?gemm_ex") + ", context " +
                          choice->running + " (bli_gks_query_cntx), 1-thread runtime";
    } else {
      choice->interface = blis_expert::available() ? "cblas (this BLIS lacks the expert symbols)"
                                                   : "cblas (prism built without <blis.h>)";
    }
    lib->kernels_ = std::move(choice);
    return lib;
  }
};

const blas_library& blas_library::get(blas_build b) {
  // One slot per build, opened on first use; run_once makes it thread-safe and a
  // failed open (exception) leaves the flag unset so a later call reports it again.
  // The objects are never destroyed (the libraries stay loaded for the process lifetime):
  // code that runs at exit, such as libprism_blas's PRISM_STATS summary, may still name them.
  // The two leaf builds also get prism's choice of kernels (leaf_loader, below); the
  // environment changes that needs happen here, inside run_once, once per process.
  static run_once flags[5];  // every leaf passes here
  static blas_library* libs[5] = {};
  const int i = static_cast<int>(b);
  flags[i]([&] {
    if (b == blas_build::openblas64_pthread) libs[i] = leaf_loader::openblas(library_path(b));
    else if (b == blas_build::blis_serial) libs[i] = leaf_loader::blis(library_path(b), PRISM_BLIS_SERIAL_PATH);
    else libs[i] = new blas_library(library_path(b), false);
  });
  return *libs[i];
}

void* blas_library::symbol(const char* name) const { return ::dlsym(handle_, name); }

std::string blas_library::kernel_name() const {
  if (auto* f = reinterpret_cast<char* (*)()>(symbol("openblas_get_corename"))) return f();
  auto* query = reinterpret_cast<int (*)()>(symbol("bli_arch_query_id"));
  auto* name = reinterpret_cast<const char* (*)(int)>(symbol("bli_arch_string"));
  if (query != nullptr && name != nullptr) return name(query());
  return "";
}

int blas_library::threads() const {
  if (auto* f = reinterpret_cast<int (*)()>(symbol("openblas_get_num_threads"))) return f();
  if (auto* f = reinterpret_cast<long (*)()>(symbol("bli_thread_get_num_threads"))) return int(f());
  return 0;
}

bool blas_library::set_threads(int threads) const {
  if (auto* f = reinterpret_cast<void (*)(int)>(symbol("openblas_set_num_threads"))) {
    f(threads);
    return true;
  }
  if (auto* f = reinterpret_cast<void (*)(long)>(symbol("bli_thread_set_num_threads"))) {
    f(threads);
    return true;
  }
  return false;
}

namespace {
template <scalar T>
double measure(const blas_library& lib, std::int64_t m, std::int64_t n, std::int64_t k, int reps) {
  // Operands with small exact values (no denormals, no overflow); their contents do not
  // matter to the rate. beta = 0, so every call computes the same C.
  std::vector<T> A(std::size_t(m * k), T(0.5)), B(std::size_t(k * n), T(0.25)), C(std::size_t(m * n));
  auto call = [&] { lib.gemm<T>('N', 'N', m, n, k, T(1), A.data(), m, B.data(), k, T(0), C.data(), m); };
  call();  // warm-up: first-touch of C, the library's buffers
  double best = 1e300;
  for (int r = 0; r < std::max(1, reps); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return gemm_flops(scalar_type_of<T>(), m, n, k) / best * 1e-9;
}
}  // namespace

double blas_library::measure_gflops(scalar_type t, std::int64_t m, std::int64_t n, std::int64_t k, int reps) const {
  switch (t) {
    case scalar_type::s: return measure<float>(*this, m, n, k, reps);
    case scalar_type::d: return measure<double>(*this, m, n, k, reps);
    case scalar_type::c: return measure<std::complex<float>>(*this, m, n, k, reps);
    case scalar_type::z: return measure<std::complex<double>>(*this, m, n, k, reps);
  }
  return 0;
}

template <scalar T>
void blas_library::gemm(char transa, char transb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                        const T* A, std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C,
                        std::int64_t ldc) const {
  scale_unless_finite(beta, C, ldc, m, n, 0, false);
  const auto aside = set_aside_non_finite(blis_ && beta == T(1), C, ldc, m, n, 0);
  if (blis_cntx_ != nullptr) {
    constexpr int slot = std::same_as<T, float> ? 0 : std::same_as<T, double> ? 1 : std::same_as<T, std::complex<float>> ? 2 : 3;
    blis_expert::gemm<T>(blis_ex_[slot], transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, blis_cntx_,
                         blis_rntm_);
  } else {
    const int ta = cblas_trans(transa), tb = cblas_trans(transb);
    if (ilp64_) call_gemm<std::int64_t, T>(gemm_, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    else call_gemm<int, T>(gemm_, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  add_back(aside, C);
}

#define PRISM_INSTANTIATE(T)                                                                        \
  template void blas_library::gemm<T>(char, char, std::int64_t, std::int64_t, std::int64_t, T,      \
                                      const T*, std::int64_t, const T*, std::int64_t, T, T*,        \
                                      std::int64_t) const;
PRISM_INSTANTIATE(float)
PRISM_INSTANTIATE(double)
PRISM_INSTANTIATE(std::complex<float>)
PRISM_INSTANTIATE(std::complex<double>)
#undef PRISM_INSTANTIATE

namespace {
// The OpenBLAS leaf: prism's private copy of the ILP64 pthread build, pinned to one thread.
// If the host already loaded that file (a program using libblas64.so.3, e.g. one linked
// with libprism_blas64), pinning it would pin the host's BLAS, so the LP64 pthread build
// is used instead if the host has not loaded that one; serial BLIS is the last resort.
//
// A shared copy already running one thread is used as it is: prism changes nothing by
// calling it. That is the case of two prism copies in one process (a program using
// libprism that also loads libprism_blas, or prism_bench's prism_blas column): the first
// one pinned the file to one thread.
const blas_library& resolve_openblas_leaf() {
  const blas_library& ob = blas_library::get(blas_build::openblas64_pthread);
  if (!ob.shared_with_host() || ob.threads() == 1) return ob;
  try {
    const blas_library& lp = blas_library::get(blas_build::openblas_pthread);
    if (!lp.shared_with_host()) {
      lp.set_threads(1);
      return lp;
    }
  } catch (const backend_error&) {
    // not installed: fall through to BLIS
  }
  std::fprintf(stderr, "prism: warning: %s (and %s) are already loaded by this process; prism will not change "
                       "their thread setting, so its leaves use serial BLIS instead\n",
               ob.path().c_str(), library_path(blas_build::openblas_pthread).c_str());
  return blas_library::get(blas_build::blis_serial);
}

// What leaf_library resolved, for reports that must not load anything.
std::atomic<const blas_library*> resolved_openblas{nullptr}, resolved_blis{nullptr};
}  // namespace

const blas_library& leaf_library(leaf_backend b) {
  // Resolved once; afterwards a leaf call pays one guard check (this is on the
  // small-problem path, where a few nanoseconds show).
  if (b == leaf_backend::blis) {
    static const blas_library& blis = [] () -> const blas_library& {
      const blas_library& l = blas_library::get(blas_build::blis_serial);
      resolved_blis.store(&l);
      return l;
    }();
    return blis;
  }
  static const blas_library& openblas = [] () -> const blas_library& {
    const blas_library& l = resolve_openblas_leaf();
    resolved_openblas.store(&l);
    return l;
  }();
  return openblas;
}

const blas_library* resolved_leaf_library(leaf_backend b) noexcept {
  return (b == leaf_backend::blis ? resolved_blis : resolved_openblas).load();
}

}  // namespace prism::detail
