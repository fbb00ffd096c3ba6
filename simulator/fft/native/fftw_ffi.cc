// FFTW transforms over any subset of the axes of a row-major array, called by XLA on CPU through an
// XLA FFI custom call (see simulator/fft/local.py, which is the only caller).
//
// The buffers XLA hands over are used in place of a copy: FFTW's guru64 interface describes the
// transformed axes and every other (batch) axis of a row-major array by their sizes and strides, so a
// 1D transform along z, a 2D transform over (x, y) with z as a batch axis, or a fused 3D transform
// of three velocity components all run directly on XLA's buffers.
//
// Two handlers:
//   simulator_fftw      r2c, c2c and the real-to-real DCT-I (REDFT00, the Chebyshev transform between
//                       plates); FFTW preserves the input (its default for these).
//   simulator_fftw_c2r  c2r: FFTW always overwrites the input of a multi-dimensional c2r, so the
//                       input is aliased to a second (scratch) result by the caller: XLA then hands
//                       us a buffer we may destroy, copying the operand first only if it is still
//                       needed elsewhere.
// Transforms are unnormalised (FFTW's, and NumPy's forward): the caller scales inverses by 1/N.
// A threaded plan's jobs run on the handler's thread pool, XLA's intra-op threads (ParallelLoop).
// (One file, about 520 lines: FFTW's double and float entry points spelled out once each, the wisdom shared
// between processes and the parallel loop on XLA's threads belong with the handlers that use them.)
//
// Plans are cached per (transform kind, precision, axis sizes and strides, thread count, planner
// effort, alignment) and reused with the new-array execute functions, which are thread-safe:
// several virtual CPU devices run this handler concurrently from XLA's threads. Planning (and
// fftw_plan_with_nthreads, a global setting) is not thread-safe and is done under one mutex for
// both precisions. Plans are made on scratch arrays (FFTW_MEASURE overwrites the arrays it plans
// on); a plan may only be executed on arrays with the same SIMD alignment as its planning arrays, so
// buffers that are not aligned get their own plan made with FFTW_UNALIGNED. Measured plans are shared
// between processes through a wisdom file (see SharedWisdom), so that every process rounds alike.

#include <Python.h>
#include <fftw3.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

enum Kind : int64_t { kR2C = 0, kC2R = 1, kC2CForward = 2, kC2CBackward = 3, kDct1 = 4 };

std::mutex planner_mutex;  // guards every FFTW planner call, both precisions, and the plan caches

// ---- FFTW's parallel loops on XLA's own threads ----------------------------------------------------
// A multi-threaded FFTW plan splits its work into jobs and hands them to a "parallel loop". FFTW's
// default loop runs them on FFTW's own worker threads, which then compete for the cores with XLA's
// intra-op threads. Ours runs them on XLA's intra-op pool, the one the handler is given: the calling
// thread takes jobs itself and the pool's threads take the rest as they come free, so a transform never
// waits for a thread that is busy elsewhere (and never deadlocks when every pool thread is inside a
// transform) and the process keeps one set of threads.
// Which thread runs a job does not change its arithmetic: the results are FFTW's, bit for bit.

using ParallelLoopFn = void (*)(void* (*)(char*), char*, size_t, int, void*);

thread_local ffi::ThreadPool* current_pool = nullptr;  // the running handler's pool, for ParallelLoop

struct Loop {
  void* (*work)(char*);
  char* jobdata;
  size_t elsize;
  int njobs;
  ffi::ThreadPool* pool;
  std::atomic<int> next{0}, done{0};
  std::mutex mutex;
  std::condition_variable finished;

  void run() {  // take jobs until none are left
    for (int i = next.fetch_add(1); i < njobs; i = next.fetch_add(1)) {
      work(jobdata + elsize * static_cast<size_t>(i));
      if (done.fetch_add(1) + 1 == njobs) {
        std::lock_guard<std::mutex> lock(mutex);
        finished.notify_all();
      }
    }
  }
};

// Sets the pool FFTW's jobs go to on this thread while a handler runs (nested loops included).
class PoolScope {
 public:
  explicit PoolScope(ffi::ThreadPool* pool) : saved_(current_pool) { current_pool = pool; }
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;
  ~PoolScope() { current_pool = saved_; }

 private:
  ffi::ThreadPool* saved_;
};

// Outside a handler (another library's plan in this process: the callback is FFTW's global setting)
// the jobs get threads of their own, as FFTW's default loop would give them.
void ThreadsOfTheirOwn(void* (*work)(char*), char* jobdata, size_t elsize, int njobs) {
  std::vector<std::thread> threads;
  for (int i = 1; i < njobs; ++i)
    threads.emplace_back([=] { work(jobdata + elsize * static_cast<size_t>(i)); });
  work(jobdata);
  for (std::thread& t : threads) t.join();
}

void ParallelLoop(void* (*work)(char*), char* jobdata, size_t elsize, int njobs, void*) {
  ffi::ThreadPool* pool = current_pool;
  if (njobs <= 1) {
    if (njobs == 1) work(jobdata);
    return;
  }
  if (pool == nullptr) return ThreadsOfTheirOwn(work, jobdata, elsize, njobs);
  auto loop = std::make_shared<Loop>();
  loop->work = work;
  loop->jobdata = jobdata;
  loop->elsize = elsize;
  loop->njobs = njobs;
  loop->pool = pool;
  // A task that starts after every job is taken returns at once; `loop` outlives it.
  for (int t = 1; t < njobs; ++t)
    pool->Schedule([loop] {
      PoolScope scope(loop->pool);
      loop->run();
    });
  loop->run();
  std::unique_lock<std::mutex> lock(loop->mutex);
  loop->finished.wait(lock, [&] { return loop->done.load() == njobs; });
}

// One set of FFTW entry points per precision (fftw_* for double, fftwf_* for float).
template <typename Real>
struct Fftw;

template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  using IoDim = fftw_iodim64;
  static int init_threads() { return fftw_init_threads(); }
  static void set_loop(ParallelLoopFn loop) { fftw_threads_set_callback(loop, nullptr); }
  static void plan_with_nthreads(int n) { fftw_plan_with_nthreads(n); }
  static Plan plan(int64_t kind, int rank, const IoDim* dims, int hrank, const IoDim* hdims, void* in,
                   void* out, unsigned flags) {
    switch (kind) {
      case kR2C:
        return fftw_plan_guru64_dft_r2c(rank, dims, hrank, hdims, static_cast<double*>(in),
                                        static_cast<Complex*>(out), flags);
      case kDct1: {
        const std::vector<fftw_r2r_kind> kinds(rank, FFTW_REDFT00);
        return fftw_plan_guru64_r2r(rank, dims, hrank, hdims, static_cast<double*>(in), static_cast<double*>(out),
                                  kinds.data(), flags);
      }
      case kC2R:
        return fftw_plan_guru64_dft_c2r(rank, dims, hrank, hdims, static_cast<Complex*>(in),
                                        static_cast<double*>(out), flags);
      default:
        return fftw_plan_guru64_dft(rank, dims, hrank, hdims, static_cast<Complex*>(in),
                                    static_cast<Complex*>(out),
                                    kind == kC2CForward ? FFTW_FORWARD : FFTW_BACKWARD, flags);
    }
  }
  static void execute(int64_t kind, Plan p, void* in, void* out) {
    switch (kind) {
      case kR2C:
        return fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<Complex*>(out));
      case kC2R:
        return fftw_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<double*>(out));
      case kDct1:
        return fftw_execute_r2r(p, static_cast<double*>(in), static_cast<double*>(out));
      default:
        return fftw_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
    }
  }
  static int alignment_of(void* p) { return fftw_alignment_of(static_cast<double*>(p)); }
  static void* malloc(size_t bytes) { return fftw_malloc(bytes); }
  static void free(void* p) { fftw_free(p); }
  static int import_wisdom(const char* path) { return fftw_import_wisdom_from_filename(path); }
  static int export_wisdom(const char* path) { return fftw_export_wisdom_to_filename(path); }
  static constexpr const char* kSuffix = ".f64";
};

template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  using IoDim = fftwf_iodim64;
  static int init_threads() { return fftwf_init_threads(); }
  static void set_loop(ParallelLoopFn loop) { fftwf_threads_set_callback(loop, nullptr); }
  static void plan_with_nthreads(int n) { fftwf_plan_with_nthreads(n); }
  static Plan plan(int64_t kind, int rank, const IoDim* dims, int hrank, const IoDim* hdims, void* in,
                   void* out, unsigned flags) {
    switch (kind) {
      case kR2C:
        return fftwf_plan_guru64_dft_r2c(rank, dims, hrank, hdims, static_cast<float*>(in),
                                         static_cast<Complex*>(out), flags);
      case kDct1: {
        const std::vector<fftwf_r2r_kind> kinds(rank, FFTW_REDFT00);
        return fftwf_plan_guru64_r2r(rank, dims, hrank, hdims, static_cast<float*>(in), static_cast<float*>(out),
                                  kinds.data(), flags);
      }
      case kC2R:
        return fftwf_plan_guru64_dft_c2r(rank, dims, hrank, hdims, static_cast<Complex*>(in),
                                         static_cast<float*>(out), flags);
      default:
        return fftwf_plan_guru64_dft(rank, dims, hrank, hdims, static_cast<Complex*>(in),
                                     static_cast<Complex*>(out),
                                     kind == kC2CForward ? FFTW_FORWARD : FFTW_BACKWARD, flags);
    }
  }
  static void execute(int64_t kind, Plan p, void* in, void* out) {
    switch (kind) {
      case kR2C:
        return fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<Complex*>(out));
      case kC2R:
        return fftwf_execute_dft_c2r(p, static_cast<Complex*>(in), static_cast<float*>(out));
      case kDct1:
        return fftwf_execute_r2r(p, static_cast<float*>(in), static_cast<float*>(out));
      default:
        return fftwf_execute_dft(p, static_cast<Complex*>(in), static_cast<Complex*>(out));
    }
  }
  static int alignment_of(void* p) { return fftwf_alignment_of(static_cast<float*>(p)); }
  static void* malloc(size_t bytes) { return fftwf_malloc(bytes); }
  static void free(void* p) { fftwf_free(p); }
  static int import_wisdom(const char* path) { return fftwf_import_wisdom_from_filename(path); }
  static int export_wisdom(const char* path) { return fftwf_export_wisdom_to_filename(path); }
  static constexpr const char* kSuffix = ".f32";
};

// A transform as FFTW's guru interface sees it: sizes and strides (in elements) of the transformed
// axes, in the caller's order (for r2c/c2r the LAST one is halved), and of every other axis.
struct Geometry {
  std::vector<int64_t> n, is, os;     // transformed axes: logical size, input and output stride
  std::vector<int64_t> hn, his, hos;  // batch ("howmany") axes
};

std::vector<int64_t> RowMajorStrides(ffi::Span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

// Checks the shapes against the transform kind and builds its geometry; an empty string means valid.
std::string MakeGeometry(int64_t kind, ffi::Span<const int64_t> in_shape, ffi::Span<const int64_t> out_shape,
                         ffi::Span<const int64_t> axes_attr, Geometry* g) {
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  if (static_cast<int64_t>(out_shape.size()) != rank) return "input and output ranks differ";
  if (axes_attr.size() == 0) return "no axes to transform";
  std::vector<int64_t> axes;
  std::vector<bool> transformed(rank, false);
  for (int64_t a : axes_attr) {
    if (a < -rank || a >= rank) return "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
    a = a < 0 ? a + rank : a;
    if (transformed[a]) return "axis " + std::to_string(a) + " repeated";
    transformed[a] = true;
    axes.push_back(a);
  }
  const int64_t halved = axes.back();
  for (int64_t i = 0; i < rank; ++i) {
    const bool half = (kind == kR2C || kind == kC2R) && i == halved;
    const int64_t real_n = kind == kC2R ? out_shape[i] : in_shape[i];
    const int64_t other = kind == kC2R ? in_shape[i] : out_shape[i];
    if (other != (half ? real_n / 2 + 1 : real_n))
      return "shape mismatch on axis " + std::to_string(i) + ": " + std::to_string(in_shape[i]) + " -> " +
             std::to_string(out_shape[i]);
  }
  const std::vector<int64_t> is = RowMajorStrides(in_shape), os = RowMajorStrides(out_shape);
  for (int64_t a : axes) {
    g->n.push_back(kind == kC2R ? out_shape[a] : in_shape[a]);
    g->is.push_back(is[a]);
    g->os.push_back(os[a]);
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (transformed[i] || in_shape[i] == 1) continue;
    // merge with the previous batch axis when, in both arrays, the two address like one axis
    if (!g->hn.empty() && g->his.back() == in_shape[i] * is[i] &&
        g->hos.back() == in_shape[i] * os[i]) {
      g->hn.back() *= in_shape[i];
      g->his.back() = is[i];
      g->hos.back() = os[i];
      continue;
    }
    g->hn.push_back(in_shape[i]);
    g->his.push_back(is[i]);
    g->hos.push_back(os[i]);
  }
  return "";
}

// ---- wisdom shared between processes ---------------------------------------------------------------
// FFTW_MEASURE picks a plan by timing candidates, so two processes may pick different plans for the
// same transform and round differently: a run restarted from a checkpoint would not be bitwise equal
// to an uninterrupted one, nor would the processes of one run agree. Measured plans are therefore
// kept as FFTW wisdom in a file (one per precision). A process that has to plan takes an exclusive
// lock on it, reads it, plans (FFTW reuses a plan found there instead of measuring), writes back
// the union of the file and its own wisdom, and unlocks: processes on one machine plan one after the
// other, and all use the plan of the first that measured a transform. Failing to lock, read or write
// the file only costs that sharing; the transforms stay correct.

std::string wisdom_base;  // set by set_wisdom(); empty: no file

template <typename Real>
class SharedWisdom {
 public:
  SharedWisdom() {
    if (wisdom_base.empty()) return;
    path_ = wisdom_base + Fftw<Real>::kSuffix;
    fd_ = open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && flock(fd_, LOCK_EX) != 0) {
      close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) Fftw<Real>::import_wisdom(path_.c_str());
  }
  SharedWisdom(const SharedWisdom&) = delete;
  SharedWisdom& operator=(const SharedWisdom&) = delete;
  ~SharedWisdom() {
    if (fd_ >= 0) close(fd_);  // closing releases the lock
  }
  // Writes this process's wisdom (which includes what was read) to a temporary file renamed over
  // the old one, so that a reader never sees half a file.
  void save() const {
    if (fd_ < 0) return;
    const std::string tmp = path_ + ".tmp" + std::to_string(getpid());
    if (Fftw<Real>::export_wisdom(tmp.c_str()) == 0 || rename(tmp.c_str(), path_.c_str()) != 0)
      unlink(tmp.c_str());
  }

 private:
  std::string path_;
  int fd_ = -1;
};

template <typename Real>
std::map<std::vector<int64_t>, typename Fftw<Real>::Plan>& PlanCache() {
  static std::map<std::vector<int64_t>, typename Fftw<Real>::Plan> cache;
  return cache;
}

size_t plan_count = 0;  // plans made so far, both precisions (read by tests through plan_count())

unsigned PlannerFlag(int64_t effort) {
  switch (effort) {
    case 0:
      return FFTW_ESTIMATE;
    case 2:
      return FFTW_PATIENT;
    default:
      return FFTW_MEASURE;
  }
}

template <typename Real>
ffi::Error Transform(int64_t kind, void* in, size_t in_bytes, void* out, size_t out_bytes,
                     const Geometry& g, int64_t nthreads, int64_t effort, ffi::ThreadPool* pool) {
  using F = Fftw<Real>;
  PoolScope scope(pool);  // planning (which times candidates) and execution run their jobs there
  const bool aligned = F::alignment_of(in) == 0 && F::alignment_of(out) == 0;
  const bool in_place = in == out;  // c2c and DCT-I: the caller aliases the result to the operand
  std::vector<int64_t> key = {kind, nthreads, effort, aligned, in_place, static_cast<int64_t>(g.n.size())};
  for (size_t i = 0; i < g.n.size(); ++i) key.insert(key.end(), {g.n[i], g.is[i], g.os[i]});
  for (size_t i = 0; i < g.hn.size(); ++i) key.insert(key.end(), {g.hn[i], g.his[i], g.hos[i]});

  typename F::Plan plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(planner_mutex);
    auto& cache = PlanCache<Real>();
    auto found = cache.find(key);
    if (found != cache.end()) {
      plan = found->second;
    } else {
      static bool threads_ready = F::init_threads() != 0 && (F::set_loop(ParallelLoop), true);
      if (!threads_ready) return ffi::Error::Internal("FFTW could not start its threads");
      std::vector<typename F::IoDim> dims(g.n.size()), hdims(g.hn.size());
      for (size_t i = 0; i < dims.size(); ++i) dims[i] = {g.n[i], g.is[i], g.os[i]};
      for (size_t i = 0; i < hdims.size(); ++i) hdims[i] = {g.hn[i], g.his[i], g.hos[i]};
      // scratch arrays: planning with FFTW_MEASURE writes to them
      void* scratch_in = F::malloc(in_bytes);
      void* scratch_out = in_place ? scratch_in : F::malloc(out_bytes);
      if (scratch_in == nullptr || scratch_out == nullptr) {
        F::free(scratch_in);
        if (!in_place) F::free(scratch_out);
        return ffi::Error::Internal("out of memory for FFTW planning arrays");
      }
      std::memset(scratch_in, 0, in_bytes);
      F::plan_with_nthreads(static_cast<int>(nthreads));
      unsigned flags = PlannerFlag(effort) | (aligned ? 0u : FFTW_UNALIGNED);
      if (kind == kC2R) flags |= FFTW_DESTROY_INPUT;
      {
        // FFTW_ESTIMATE plans are the same in every process; measured ones are shared
        std::optional<SharedWisdom<Real>> wisdom;
        if (effort != 0) wisdom.emplace();
        plan = F::plan(kind, static_cast<int>(dims.size()), dims.data(), static_cast<int>(hdims.size()),
                       hdims.data(), scratch_in, scratch_out, flags);
        if (plan != nullptr && wisdom) wisdom->save();
      }
      F::free(scratch_in);
      if (!in_place) F::free(scratch_out);
      if (plan == nullptr) return ffi::Error::Internal("FFTW could not plan this transform");
      cache.emplace(key, plan);
      ++plan_count;
    }
  }
  F::execute(kind, plan, in, out);
  return ffi::Error::Success();
}

ffi::Error Dispatch(int64_t kind, const ffi::AnyBuffer& in, void* in_data, ffi::AnyBuffer* out,
                    ffi::Span<const int64_t> axes, int64_t nthreads, int64_t effort, ffi::ThreadPool* pool) {
  if (kind < kR2C || kind > kDct1) return ffi::Error::InvalidArgument("unknown transform kind");
  if (nthreads < 1) return ffi::Error::InvalidArgument("nthreads must be at least 1");
  const ffi::DataType ti = in.element_type(), to = out->element_type();
  bool is_double;
  if (kind == kR2C && ti == ffi::F64 && to == ffi::C128) is_double = true;
  else if (kind == kR2C && ti == ffi::F32 && to == ffi::C64) is_double = false;
  else if (kind == kC2R && ti == ffi::C128 && to == ffi::F64) is_double = true;
  else if (kind == kC2R && ti == ffi::C64 && to == ffi::F32) is_double = false;
  else if (kind == kDct1 && ti == ffi::F64 && to == ffi::F64) is_double = true;
  else if (kind == kDct1 && ti == ffi::F32 && to == ffi::F32) is_double = false;
  else if (kind <= kC2CBackward && kind >= kC2CForward && ti == ffi::C128 && to == ffi::C128) is_double = true;
  else if (kind <= kC2CBackward && kind >= kC2CForward && ti == ffi::C64 && to == ffi::C64) is_double = false;
  else return ffi::Error::InvalidArgument("element types do not match the transform kind");
  Geometry g;
  std::string problem = MakeGeometry(kind, in.dimensions(), out->dimensions(), axes, &g);
  if (!problem.empty()) return ffi::Error::InvalidArgument(problem);
  if (in.element_count() == 0 || out->element_count() == 0) return ffi::Error::Success();
  if (is_double)
    return Transform<double>(kind, in_data, in.size_bytes(), out->untyped_data(), out->size_bytes(), g,
                             nthreads, effort, pool);
  return Transform<float>(kind, in_data, in.size_bytes(), out->untyped_data(), out->size_bytes(), g,
                          nthreads, effort, pool);
}

ffi::Error ForwardOrComplex(ffi::ThreadPool pool, ffi::AnyBuffer in, ffi::Result<ffi::AnyBuffer> out,
                            int64_t kind, ffi::Span<const int64_t> axes, int64_t nthreads, int64_t planner) {
  if (kind == kC2R) return ffi::Error::InvalidArgument("c2r goes through simulator_fftw_c2r");
  return Dispatch(kind, in, in.untyped_data(), &(*out), axes, nthreads, planner, &pool);
}

ffi::Error ComplexToReal(ffi::ThreadPool pool, ffi::AnyBuffer in, ffi::Result<ffi::AnyBuffer> out,
                         ffi::Result<ffi::AnyBuffer> scratch, ffi::Span<const int64_t> axes,
                         int64_t nthreads, int64_t planner) {
  // `scratch` is aliased to `in`, so it is the same buffer; should XLA ever hand over two, work
  // on the scratch copy and leave the operand intact.
  if (scratch->size_bytes() != in.size_bytes()) return ffi::Error::InvalidArgument("scratch size mismatch");
  void* work = scratch->untyped_data();
  if (work != in.untyped_data()) std::memcpy(work, in.untyped_data(), in.size_bytes());
  return Dispatch(kC2R, in, work, &(*out), axes, nthreads, planner, &pool);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorFftw, ForwardOrComplex,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("kind")
                                  .Attr<ffi::Span<const int64_t>>("axes")
                                  .Attr<int64_t>("nthreads")
                                  .Attr<int64_t>("planner"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorFftwC2R, ComplexToReal,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<ffi::Span<const int64_t>>("axes")
                                  .Attr<int64_t>("nthreads")
                                  .Attr<int64_t>("planner"));

// ---- the Python module: handler capsules and what `simulator info` reports -----------------------

namespace {

PyObject* Handlers(PyObject*, PyObject*) {
  PyObject* out = PyDict_New();
  if (out == nullptr) return nullptr;
  const std::pair<const char*, void*> handlers[] = {
      {"simulator_fftw", reinterpret_cast<void*>(SimulatorFftw)},
      {"simulator_fftw_c2r", reinterpret_cast<void*>(SimulatorFftwC2R)},
  };
  for (const auto& [name, fn] : handlers) {
    PyObject* capsule = PyCapsule_New(fn, nullptr, nullptr);
    if (capsule == nullptr || PyDict_SetItemString(out, name, capsule) != 0) {
      Py_XDECREF(capsule);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(capsule);
  }
  return out;
}

PyObject* Version(PyObject*, PyObject*) { return PyUnicode_FromString(fftw_version); }

PyObject* SetWisdom(PyObject*, PyObject* arg) {
  const char* path = PyUnicode_AsUTF8(arg);
  if (path == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(planner_mutex);
  wisdom_base = path;
  Py_RETURN_NONE;
}

PyObject* PlanCount(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(planner_mutex);
  return PyLong_FromSize_t(plan_count);
}

PyMethodDef methods[] = {
    {"handlers", Handlers, METH_NOARGS, "XLA FFI handler capsules by target name."},
    {"version", Version, METH_NOARGS, "FFTW's version string (fftw_version)."},
    {"set_wisdom", SetWisdom, METH_O,
     "Base path of the wisdom files shared by processes (.f64/.f32 appended); '' for none."},
    {"plan_count", PlanCount, METH_NOARGS, "Number of FFTW plans made (and cached) in this process."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fftw", "FFTW transforms as XLA FFI handlers (CPU).", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__fftw(void) { return PyModule_Create(&module); }
