// Particles' kernels called by XLA on CPU through XLA FFI custom calls:
//   simulator_window_gather, simulator_window_scatter: the windowed gather of a grid's values at points and
//     its transpose, the scatter (the particle-mesh assignment); simulator/fft/window.py is their only caller
//     and gives the differentiation and batching rules;
//   simulator_first: the indices of the first entries of a mask that are set (the hand-over of particles
//     between devices picks its rows with it: simulator/fft/owned.py).
//
// Why native: XLA's CPU gather and scatter walk one element at a time with an index computation each,
// 8 (cloud in cell) or 64 (4-node windows) elements per point and batch entry, and XLA materialises the
// gathered windows before contracting them with the weights: 10-20 ns per element measured at 64^3
// (docs/PERFORMANCE.md). Here each point's window is contracted as it is read, from three 1D weight
// vectors, with the stencil's offsets computed once per point and shared by every batch entry.
//
// Operands (row-major, as XLA hands them over):
//   field  (B, n0, n1, n2) real: the grid block and its halo planes (the caller's);
//   cells  (P, 3) int32: the index along each axis of the stencil's first node;
//   frac   (P, 3) real: the point's offset t in [0, 1) from its cell along each axis, the weights' argument;
//   values (B, P) real: what each point carries (the scatter's input, the gather's output).
// Attributes: `window` (0 lagrange4, 1 cic, 2 tsc: their weights below, the same functions as
// simulator/fft/points.py's), `orders` (3): the derivative of the weights taken along each axis (d^k/dt^k:
// the tangents of the offsets), `wrap` (3): 1 where an axis is periodic in the block itself (the stencil's
// nodes taken mod n), 0 where the caller's halo holds every node (a first node outside [0, n - width] is
// clamped: never read or written out of bounds), `threads`: the gather splits the points into that many
// ranges, the scatter too, each range adding into its own copy of the grid (the second result, scratch of
// (threads - 1) grids that XLA allocates and counts), summed in a fixed order: the same bits for a given
// thread count, whichever thread runs which range.

#include <Python.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

enum WindowKind : int64_t { kLagrange4 = 0, kCic = 1, kTsc = 2 };

// d^order/dt^order of the weights of nodes 0 .. width-1 at offset t.
template <typename Real>
void CicWeights(Real t, int64_t order, Real* w) {
  if (order == 0) {
    w[0] = 1 - t;
    w[1] = t;
  } else if (order == 1) {
    w[0] = -1;
    w[1] = 1;
  } else {
    w[0] = w[1] = 0;
  }
}

// The TSC kernel K(d) = 3/4 - d^2 (|d| < 1/2), (3/2 - |d|)^2 / 2 (1/2 <= |d| < 3/2), 0 beyond, and its
// derivatives, at d = t + 1, t, t - 1, t - 2 (nodes -1 .. 2 of the cell).
template <typename Real>
Real TscKernel(Real d, int64_t order) {
  const Real a = d < 0 ? -d : d;
  const Real sign = d < 0 ? Real(-1) : (d > 0 ? Real(1) : Real(0));
  if (a < Real(0.5)) return order == 0 ? Real(0.75) - d * d : (order == 1 ? -2 * d : (order == 2 ? Real(-2) : 0));
  if (a < Real(1.5)) {
    const Real r = Real(1.5) - a;
    return order == 0 ? Real(0.5) * r * r : (order == 1 ? -r * sign : (order == 2 ? sign * sign : 0));
  }
  return 0;
}

template <typename Real>
void TscWeights(Real t, int64_t order, Real* w) {
  for (int k = 0; k < 4; ++k) w[k] = TscKernel<Real>(t + 1 - k, order);
}

// The 4-point Lagrange interpolant on nodes -1, 0, 1, 2: the product forms for the values, the expanded
// cubics (coefficients of 1, t, t^2, t^3) for the derivatives.
template <typename Real>
void Lagrange4Weights(Real t, int64_t order, Real* w) {
  if (order == 0) {
    w[0] = -t * (t - 1) * (t - 2) / 6;
    w[1] = (t + 1) * (t - 1) * (t - 2) / 2;
    w[2] = -(t + 1) * t * (t - 2) / 2;
    w[3] = (t + 1) * t * (t - 1) / 6;
    return;
  }
  static const double c[4][4] = {{0, -1.0 / 3, 0.5, -1.0 / 6},
                                 {1, -0.5, -1, 0.5},
                                 {0, 1, 0.5, -0.5},
                                 {0, -1.0 / 6, 0, 1.0 / 6}};
  for (int k = 0; k < 4; ++k) {
    Real sum = 0, power = 1;
    for (int m = static_cast<int>(order); m < 4; ++m) {
      double falling = 1;  // m! / (m - order)!
      for (int q = 0; q < order; ++q) falling *= m - q;
      sum += Real(c[k][m] * falling) * power;
      power *= t;
    }
    w[k] = sum;
  }
}

template <typename Real, int Kind>
inline void Weights(Real t, int64_t order, Real* w) {
  if (Kind == kCic) return CicWeights(t, order, w);
  if (Kind == kTsc) return TscWeights(t, order, w);
  Lagrange4Weights(t, order, w);
}

template <int Kind>
constexpr int Width() {
  return Kind == kCic ? 2 : 4;
}

struct Geometry {
  int64_t batch, points, n[3], wrap[3], orders[3], window;
  int64_t volume() const { return n[0] * n[1] * n[2]; }
};

// One point's stencil: the flat offsets of its nodes along the first two axes, the first node along the last
// (the nodes along it are contiguous unless they wrap: then `last` holds each), and the weights.
template <typename Real, int Kind, int W = Width<Kind>()>
struct Stencil {
  int64_t offset[2][W];
  int64_t first;     // the last axis's first node, when its nodes are contiguous
  int64_t last[W];   // the last axis's nodes, when they wrap
  bool contiguous;
  Real weight[3][W];

  __attribute__((always_inline)) Stencil(const Geometry& g, const int32_t* cell, const Real* frac) {
    const int64_t stride[2] = {g.n[1] * g.n[2], g.n[2]};
    for (int a = 0; a < 3; ++a) {
      Weights<Real, Kind>(frac[a], g.orders[a], weight[a]);
      const int64_t n = g.n[a];
      int64_t c = cell[a];
      if (g.wrap[a]) {  // a first node in [-n, 2n) wraps without a division (the callers' are); any other with one
        if (c < 0) c += n;
        if (c >= n) c -= n;
        if (c < 0 || c >= n) c = ((c % n) + n) % n;
      } else {
        c = std::min(std::max<int64_t>(c, 0), n - W);
      }
      if (a < 2) {
        for (int k = 0; k < W; ++k) offset[a][k] = (c + k < n ? c + k : c + k - n) * stride[a];
      } else {
        first = c;
        contiguous = c + W <= n;
        for (int k = 0; k < W; ++k) last[k] = c + k < n ? c + k : c + k - n;
      }
    }
  }
};

template <typename Real, int Kind, bool Contiguous, int W = Width<Kind>()>
inline Real Contract(const Stencil<Real, Kind>& s, const Real* __restrict f) {
  Real sum = 0;
  for (int i = 0; i < W; ++i) {
    Real plane = 0;
    for (int j = 0; j < W; ++j) {
      const Real* row = f + s.offset[0][i] + s.offset[1][j];
      Real line = 0;
      for (int k = 0; k < W; ++k) line += (Contiguous ? row[s.first + k] : row[s.last[k]]) * s.weight[2][k];
      plane += line * s.weight[1][j];
    }
    sum += plane * s.weight[0][i];
  }
  return sum;
}

template <typename Real, int Kind, bool Contiguous, int W = Width<Kind>()>
inline void Spread(const Stencil<Real, Kind>& s, Real v, Real* __restrict f) {
  for (int i = 0; i < W; ++i) {
    const Real vi = v * s.weight[0][i];
    for (int j = 0; j < W; ++j) {
      Real* row = f + s.offset[0][i] + s.offset[1][j];
      const Real vij = vi * s.weight[1][j];
      for (int k = 0; k < W; ++k) (Contiguous ? row[s.first + k] : row[s.last[k]]) += vij * s.weight[2][k];
    }
  }
}

template <typename Real, int Kind>
void GatherRange(const Geometry& g, const Real* field, const int32_t* cells, const Real* frac, Real* out,
                 int64_t begin, int64_t end) {
  const int64_t volume = g.volume();
  for (int64_t p = begin; p < end; ++p) {
    const Stencil<Real, Kind> s(g, cells + 3 * p, frac + 3 * p);
    for (int64_t b = 0; b < g.batch; ++b)
      out[b * g.points + p] = s.contiguous ? Contract<Real, Kind, true>(s, field + b * volume)
                                           : Contract<Real, Kind, false>(s, field + b * volume);
  }
}

template <typename Real, int Kind>
void ScatterRange(const Geometry& g, const Real* values, const int32_t* cells, const Real* frac, Real* field,
                  int64_t begin, int64_t end) {
  const int64_t volume = g.volume();
  for (int64_t p = begin; p < end; ++p) {
    bool any = false;  // an empty slot carries 0: nothing to add (its stale position not even read)
    for (int64_t b = 0; b < g.batch; ++b) any = any || values[b * g.points + p] != 0;
    if (!any) continue;
    const Stencil<Real, Kind> s(g, cells + 3 * p, frac + 3 * p);
    for (int64_t b = 0; b < g.batch; ++b) {
      if (s.contiguous)
        Spread<Real, Kind, true>(s, values[b * g.points + p], field + b * volume);
      else
        Spread<Real, Kind, false>(s, values[b * g.points + p], field + b * volume);
    }
  }
}

// Runs job(0) .. job(jobs - 1) and returns when all are done: the calling thread takes jobs itself and XLA's
// intra-op threads take the rest as they come free (as the FFTW handler's parallel loop does), so a call never
// waits for a thread busy elsewhere, nor deadlocks when every pool thread is inside such a call.
struct Jobs {
  const std::function<void(int64_t)>* job;  // valid while jobs are left: the caller waits for all of them
  int64_t count;
  std::atomic<int64_t> next{0}, done{0};
  std::mutex mutex;
  std::condition_variable finished;

  void run() {
    for (int64_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
      (*job)(i);
      if (done.fetch_add(1) + 1 == count) {
        std::lock_guard<std::mutex> lock(mutex);
        finished.notify_all();
      }
    }
  }
};

void RunJobs(ffi::ThreadPool& pool, int64_t count, const std::function<void(int64_t)>& job) {
  if (count <= 1) {
    if (count == 1) job(0);
    return;
  }
  auto jobs = std::make_shared<Jobs>();
  jobs->job = &job;
  jobs->count = count;
  for (int64_t t = 1; t < count; ++t) pool.Schedule([jobs] { jobs->run(); });
  jobs->run();
  std::unique_lock<std::mutex> lock(jobs->mutex);
  jobs->finished.wait(lock, [&] { return jobs->done.load() == count; });
}

int64_t RangeStart(int64_t points, int64_t jobs, int64_t j) { return points * j / jobs; }

ffi::Error ReadGeometry(Geometry& g, int64_t batch, int64_t points, ffi::Span<const int64_t> shape,
                        int64_t window, ffi::Span<const int64_t> orders, ffi::Span<const int64_t> wrap) {
  if (shape.size() != 3 || orders.size() != 3 || wrap.size() != 3)
    return ffi::Error::InvalidArgument("window: three axes expected");
  if (window != kLagrange4 && window != kCic && window != kTsc)
    return ffi::Error::InvalidArgument("window: unknown window");
  const int64_t width = window == kCic ? 2 : 4;
  g.batch = batch;
  g.points = points;
  g.window = window;
  for (int a = 0; a < 3; ++a) {
    g.n[a] = shape[a];
    g.wrap[a] = wrap[a];
    g.orders[a] = orders[a];
    if (shape[a] < width) return ffi::Error::InvalidArgument("window: an axis shorter than the window");
  }
  return ffi::Error::Success();
}

template <typename Real>
ffi::Error Gather(ffi::ThreadPool& pool, const Geometry& g, ffi::AnyBuffer field, ffi::AnyBuffer cells,
                  ffi::AnyBuffer frac, Real* out, int64_t threads) {
  const Real* f = reinterpret_cast<const Real*>(field.untyped_data());
  const int32_t* c = reinterpret_cast<const int32_t*>(cells.untyped_data());
  const Real* t = reinterpret_cast<const Real*>(frac.untyped_data());
  const int64_t jobs = std::max<int64_t>(1, std::min(threads, g.points));
  RunJobs(pool, jobs, [&](int64_t j) {
    const int64_t begin = RangeStart(g.points, jobs, j), end = RangeStart(g.points, jobs, j + 1);
    if (g.window == kCic)
      GatherRange<Real, kCic>(g, f, c, t, out, begin, end);
    else if (g.window == kTsc)
      GatherRange<Real, kTsc>(g, f, c, t, out, begin, end);
    else
      GatherRange<Real, kLagrange4>(g, f, c, t, out, begin, end);
  });
  return ffi::Error::Success();
}

template <typename Real>
ffi::Error Scatter(ffi::ThreadPool& pool, const Geometry& g, ffi::AnyBuffer values, ffi::AnyBuffer cells,
                   ffi::AnyBuffer frac, Real* out, Real* scratch, int64_t jobs) {
  const Real* v = reinterpret_cast<const Real*>(values.untyped_data());
  const int32_t* c = reinterpret_cast<const int32_t*>(cells.untyped_data());
  const Real* t = reinterpret_cast<const Real*>(frac.untyped_data());
  const int64_t size = g.batch * g.volume();
  RunJobs(pool, jobs, [&](int64_t j) {
    Real* grid = j == 0 ? out : scratch + (j - 1) * size;
    std::memset(grid, 0, sizeof(Real) * size);
    const int64_t begin = RangeStart(g.points, jobs, j), end = RangeStart(g.points, jobs, j + 1);
    if (g.window == kCic)
      ScatterRange<Real, kCic>(g, v, c, t, grid, begin, end);
    else if (g.window == kTsc)
      ScatterRange<Real, kTsc>(g, v, c, t, grid, begin, end);
    else
      ScatterRange<Real, kLagrange4>(g, v, c, t, grid, begin, end);
  });
  if (jobs > 1) {  // the copies added into the first in job order, each job summing a range of the grid
    RunJobs(pool, jobs, [&](int64_t j) {
      const int64_t begin = RangeStart(size, jobs, j), end = RangeStart(size, jobs, j + 1);
      for (int64_t k = 1; k < jobs; ++k) {
        const Real* part = scratch + (k - 1) * size;
        for (int64_t i = begin; i < end; ++i) out[i] += part[i];
      }
    });
  }
  return ffi::Error::Success();
}

ffi::Error GatherHandler(ffi::ThreadPool pool, ffi::AnyBuffer field, ffi::AnyBuffer cells, ffi::AnyBuffer frac,
                         ffi::Result<ffi::AnyBuffer> out, int64_t window, ffi::Span<const int64_t> orders,
                         ffi::Span<const int64_t> wrap, int64_t threads) {
  auto dims = field.dimensions();
  if (dims.size() != 4 || cells.element_type() != ffi::S32 || frac.element_type() != field.element_type() ||
      out->element_type() != field.element_type())
    return ffi::Error::InvalidArgument("window gather: field (B, n0, n1, n2), cells int32, frac of its type");
  const int64_t shape[3] = {dims[1], dims[2], dims[3]};
  Geometry g;
  if (auto e = ReadGeometry(g, dims[0], frac.dimensions()[0], ffi::Span<const int64_t>(shape, 3), window, orders,
                            wrap);
      e.failure())
    return e;
  if (g.points == 0 || g.batch == 0) return ffi::Error::Success();
  if (field.element_type() == ffi::F64)
    return Gather<double>(pool, g, field, cells, frac, reinterpret_cast<double*>(out->untyped_data()), threads);
  if (field.element_type() == ffi::F32)
    return Gather<float>(pool, g, field, cells, frac, reinterpret_cast<float*>(out->untyped_data()), threads);
  return ffi::Error::InvalidArgument("window gather: float32 or float64");
}

ffi::Error ScatterHandler(ffi::ThreadPool pool, ffi::AnyBuffer values, ffi::AnyBuffer cells, ffi::AnyBuffer frac,
                          ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> scratch, int64_t window,
                          ffi::Span<const int64_t> orders, ffi::Span<const int64_t> wrap, int64_t threads) {
  auto dims = out->dimensions();
  if (dims.size() != 4 || cells.element_type() != ffi::S32 || frac.element_type() != values.element_type() ||
      out->element_type() != values.element_type())
    return ffi::Error::InvalidArgument("window scatter: values (B, P), cells int32, frac and field of its type");
  const int64_t shape[3] = {dims[1], dims[2], dims[3]};
  Geometry g;
  if (auto e = ReadGeometry(g, dims[0], frac.dimensions()[0], ffi::Span<const int64_t>(shape, 3), window, orders,
                            wrap);
      e.failure())
    return e;
  const int64_t size = g.batch * g.volume();
  const int64_t jobs = std::max<int64_t>(1, threads);
  if (static_cast<int64_t>(scratch->element_count()) != (jobs - 1) * size)
    return ffi::Error::InvalidArgument("window scatter: scratch of (threads - 1) grids expected");
  if (values.element_type() == ffi::F64)
    return Scatter<double>(pool, g, values, cells, frac, reinterpret_cast<double*>(out->untyped_data()),
                           reinterpret_cast<double*>(scratch->untyped_data()), jobs);
  if (values.element_type() == ffi::F32)
    return Scatter<float>(pool, g, values, cells, frac, reinterpret_cast<float*>(out->untyped_data()),
                          reinterpret_cast<float*>(scratch->untyped_data()), jobs);
  return ffi::Error::InvalidArgument("window scatter: float32 or float64");
}

// The indices of the first `count` set entries of `mask` (n,), in order, then n: XLA's CPU prefix sum and
// scatter did this at ~20 ns per entry (a reduce-window tree), here one pass.
ffi::Error FirstHandler(ffi::AnyBuffer mask, ffi::Result<ffi::AnyBuffer> rows) {
  if (mask.element_type() != ffi::PRED || rows->element_type() != ffi::S32)
    return ffi::Error::InvalidArgument("first: a bool mask and int32 rows expected");
  const bool* m = reinterpret_cast<const bool*>(mask.untyped_data());
  int32_t* out = reinterpret_cast<int32_t*>(rows->untyped_data());
  const int64_t n = static_cast<int64_t>(mask.element_count()), count = static_cast<int64_t>(rows->element_count());
  int64_t k = 0;
  for (int64_t i = 0; i < n && k < count; ++i)
    if (m[i]) out[k++] = static_cast<int32_t>(i);
  for (; k < count; ++k) out[k] = static_cast<int32_t>(n);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorFirst, FirstHandler,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorWindowGather, GatherHandler,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("window")
                                  .Attr<ffi::Span<const int64_t>>("orders")
                                  .Attr<ffi::Span<const int64_t>>("wrap")
                                  .Attr<int64_t>("threads"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorWindowScatter, ScatterHandler,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("window")
                                  .Attr<ffi::Span<const int64_t>>("orders")
                                  .Attr<ffi::Span<const int64_t>>("wrap")
                                  .Attr<int64_t>("threads"));

namespace {

PyObject* Handlers(PyObject*, PyObject*) {
  PyObject* out = PyDict_New();
  if (out == nullptr) return nullptr;
  const std::pair<const char*, void*> handlers[] = {
      {"simulator_window_gather", reinterpret_cast<void*>(SimulatorWindowGather)},
      {"simulator_window_scatter", reinterpret_cast<void*>(SimulatorWindowScatter)},
      {"simulator_first", reinterpret_cast<void*>(SimulatorFirst)},
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

PyMethodDef methods[] = {
    {"handlers", Handlers, METH_NOARGS, "XLA FFI handler capsules by target name."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_particles", "Particles' kernels as XLA FFI handlers (CPU).", -1,
                      methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__particles(void) { return PyModule_Create(&module); }
