// Particles' kernels called by XLA on CPU through XLA FFI custom calls:
//   simulator_window_gather, simulator_window_scatter: the windowed gather of a grid block's values at points and
//     its transpose, the scatter (the particle-mesh assignment); simulator/fft/window.py is their only caller
//     and gives the differentiation and batching rules;
//   simulator_leavers, simulator_first, simulator_take_rows, simulator_put_rows: the hand-over of particles
//     between devices (simulator/fft/owned.py), defined in handover_ffi.cc; this file holds the extension's
//     table of handlers.
//
// Why native: XLA's CPU gather and scatter walk one element at a time with an index computation each,
// 8 (cloud in cell) or 64 (4-node windows) elements per point and batch entry, and XLA materialises the
// gathered windows before contracting them with the weights: 5-10x slower (docs/PERFORMANCE.md). Here each
// point's stencil (its cell, offsets and three 1D weight vectors) is computed once, as the XLA path computes
// it (window.py's _stencil: the same operations, so the same cells and offsets), 64 points at a time in vector
// loops, and the window is contracted as it is read, for every batch entry.
//
// Operands (row-major, as XLA hands them over):
//   field  (B, n0, n1, n2) real: the device's grid block and its halo planes along the axes split between
//          devices (`cut`; an axis the block holds whole has no halo: the stencil's nodes wrap around it);
//   points (P, 3) real: physical coordinates;
//   starts (3,) int32: the block's first cell along each axis (the halo not counted);
//   live   (P,) bool or (0,): the gather's occupied slots (owned particles): an empty one gives 0 without its
//          stencil computed (at a device's capacity of twice its share, half the slots); (0,): every point;
//   values (B, P) real: what each point carries (the scatter's input, the gather's output). (Laid out point by
//          point instead, (B, P){0,1}, XLA's layouts around the call made the 4-device step's kick 2.5x slower.)
// Attributes: `window` (0 lagrange4, 1 cic, 2 tsc: the weights below, window.py's functions), `orders` (3):
// the derivative of the weights taken along each axis (d^k/dt^k of the offset t), `cut` (3), `shape` (3): the
// grid, `spacing` (3), `reach`: halo planes beyond the window's (a point's cell up to that many cells outside the
// block), `outside`: 0 every point lies in the block (unchecked), 1 a point outside gives 0 and adds nothing,
// 2 it gives NaN and adds nothing; `threads`: the gather splits the points into that many ranges, the scatter
// too, each range adding into its own copy of the grid (the second result: scratch of (threads - 1) grids that
// XLA allocates and counts), summed in a fixed order: the same bits for a given thread count, whichever thread
// runs which range.

#include <Python.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <cmath>
#include <limits>
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

// The weights themselves (order 0), the same arithmetic as Weights without a branch, so that a loop over points
// vectorises (TscKernel's branches become selects).
template <typename Real, int Kind>
inline void Values(Real t, Real* w) {
  if (Kind == kTsc) {
    for (int k = 0; k < 4; ++k) {
      const Real d = t + 1 - k, a = d < 0 ? -d : d, r = Real(1.5) - a;
      w[k] = a < Real(0.5) ? Real(0.75) - d * d : (a < Real(1.5) ? Real(0.5) * r * r : Real(0));
    }
    return;
  }
  Weights<Real, Kind>(t, 0, w);
}

template <int Kind>
constexpr int Width() {
  return Kind == kCic ? 2 : 4;
}

struct Geometry {
  int64_t batch, points, window, reach, outside;
  int64_t n[3];       // the block's extent with its halo planes
  int64_t shape[3];   // the grid's
  int64_t start[3];   // the block's first cell
  int64_t cut[3];     // 1: split between devices (a halo), 0: held whole (nodes wrap)
  int64_t orders[3];
  double spacing[3];
  int64_t below, width;
  bool thin;  // an axis held whole is shorter than the window (a plane's one cell, a thin box's few): see Wrap
  int64_t volume() const { return n[0] * n[1] * n[2]; }
};

// The stencils of a run of up to kRun consecutive points, computed axis by axis in loops over the points that
// the compiler vectorises (the cells' floor, the wrap and the weights), then used point by point by the
// contraction (Contract, Spread). Computed one point at a time before, the stencil was about half of a
// cloud-in-cell gather's time, and the 3-component gather of 64^3 points took 3.5 ms in float32 on 2 threads,
// now 2.1 (docs/PERFORMANCE.md). Per axis a:
// `node[a][p]` the point's first node in the block with its halo (on an axis held whole: wrapped into it),
// `weight[a][k][p]` node k's weight; `inside[p]` whether the point's cell lies in the block (with its reach).
// The cells and offsets are window.py's _stencil's, operation for operation (the global cell wrapped in
// floating point, exact for the integers it holds).
constexpr int64_t kRun = 64;

template <typename Real, int Kind, int W = Width<Kind>()>
struct Stencils {
  Real weight[3][W][kRun];
  int32_t node[3][kRun];  // int32: the widest vectors convert to it (a node index is below a block's extent)
  bool inside[kRun];

  void compute(const Geometry& g, const Real* __restrict x, int64_t count) {
    Real coordinate[3][kRun];  // the points' coordinates axis by axis: the loops below read them contiguously
    for (int64_t p = 0; p < count; ++p) {
      inside[p] = true;
      for (int a = 0; a < 3; ++a) coordinate[a][p] = x[3 * p + a];
    }
    for (int a = 0; a < 3; ++a) {
      // times the spacing's reciprocal in Real, as window.py does (XLA compiles its division by a constant so):
      // a point on a cell face falls in the same cell there and here
      const Real inverse = static_cast<Real>(1.0 / g.spacing[a]), size = Real(g.shape[a]);
      Real t[kRun];
      int32_t cell[kRun];
      for (int64_t p = 0; p < count; ++p) {
        const Real s = coordinate[a][p] * inverse;
        const Real base = std::floor(s);
        t[p] = s - base;
        Real wrapped = base - size * std::floor(base / size);
        // past 2^24 cells (float32) the quotient may be one off: corrected once, as the former integer wrap was
        // exact; a NaN or infinite position takes cell 0: a node index never leaves the block, whatever the input
        wrapped += wrapped < Real(0) ? size : Real(0);
        wrapped -= wrapped >= size ? size : Real(0);
        const bool valid = (wrapped >= Real(0)) & (wrapped < size);
        cell[p] = static_cast<int32_t>(valid ? wrapped : Real(0));
      }
      if (g.orders[a] == 0) {
        for (int64_t p = 0; p < count; ++p) {
          Real w[W];
          Values<Real, Kind>(t[p], w);
          for (int k = 0; k < W; ++k) weight[a][k][p] = w[k];
        }
      } else {
        for (int64_t p = 0; p < count; ++p) {
          Real w[W];
          Weights<Real, Kind>(t[p], g.orders[a], w);
          for (int k = 0; k < W; ++k) weight[a][k][p] = w[k];
        }
      }
      const int32_t n = static_cast<int32_t>(g.n[a]), shape = static_cast<int32_t>(g.shape[a]);
      if (!g.cut[a]) {  // the block holds the axis whole: the first node, wrapped
        const int32_t below = static_cast<int32_t>(g.below);
        for (int64_t p = 0; p < count; ++p) {
          const int32_t c = cell[p] - below;
          node[a][p] = c < 0 ? c + n : c;
        }
        continue;
      }
      const int32_t reach = static_cast<int32_t>(g.reach), held = n - (W - 1) - 2 * reach,
                    start = static_cast<int32_t>(g.start[a]);
      const bool check = g.outside != 0;
      for (int64_t p = 0; p < count; ++p) {
        int32_t local = cell[p] - start;
        if (reach) {  // periodic in [-reach, shape - reach): a cell just below the block is a negative offset
          local += reach;  // in (-shape, 2 shape): wrapped without a division
          local += local < 0 ? shape : 0;
          local -= local >= shape ? shape : 0;
          local -= reach;
        }
        if (check) inside[p] = inside[p] && local >= -reach && local < held + reach;
        node[a][p] = std::min(std::max(local, -reach), held + reach - 1) + reach;
      }
    }
  }
};

// A node past the end of an axis of n cells (i < n + W), wrapped into it: by one subtraction where every axis held
// whole holds the window's nodes, by the remainder where one is shorter (Geometry::thin: the kernels are compiled
// for each, so that the common case keeps its code).
template <bool Thin>
inline int64_t Wrap(int64_t i, int64_t n) {
  return Thin ? i % n : i < n ? i : i - n;
}

// One point's nodes as flat offsets: along the first two axes, and the first node along the last (its nodes
// contiguous unless they wrap: then `last` holds each).
template <int W, bool Thin>
struct Nodes {
  int64_t offset[2][W];
  int64_t first;
  int64_t last[W];
  bool contiguous;

  template <typename Real, int Kind>
  Nodes(const Geometry& g, const Stencils<Real, Kind, W>& s, int64_t p) {
    const int64_t n0 = g.n[0], n1 = g.n[1], n2 = g.n[2], a = s.node[0][p], b = s.node[1][p];
    for (int k = 0; k < W; ++k) {
      offset[0][k] = Wrap<Thin>(a + k, n0) * (n1 * n2);
      offset[1][k] = Wrap<Thin>(b + k, n1) * n2;
    }
    first = s.node[2][p];
    contiguous = first + W <= n2;
    if (!contiguous)
      for (int k = 0; k < W; ++k) last[k] = Wrap<Thin>(first + k, n2);
  }
};

// The sums of a 2-node window start from their first term: 0 + x is not x for x = -0, so the compiler keeps every
// addition to a 0 (the same value otherwise), and the cloud-in-cell gather of 3 components took 1.5x as long.
// Those of a 4-node window start from 0, which measured faster there (the 3-component gather 8.5 ms against 10.9:
// 64^3 points, float64, 2 threads).
template <typename Real, int Kind, bool Contiguous, bool Thin, int W = Width<Kind>()>
inline Real Contract(const Nodes<W, Thin>& s, const Real (&w)[3][W], const Real* __restrict f) {
  constexpr int head = W == 2 ? 1 : 0;  // terms a sum starts from (the rest are added to it)
  auto at = [&](const Real* row, int k) { return Contiguous ? row[s.first + k] : row[s.last[k]]; };
  Real sum = 0;
  for (int i = 0; i < W; ++i) {
    Real plane = 0;
    for (int j = 0; j < W; ++j) {
      const Real* row = f + s.offset[0][i] + s.offset[1][j];
      Real line = head ? at(row, 0) * w[2][0] : Real(0);
      for (int k = head; k < W; ++k) line += at(row, k) * w[2][k];
      plane = head && j == 0 ? line * w[1][0] : plane + line * w[1][j];
    }
    sum = head && i == 0 ? plane * w[0][0] : sum + plane * w[0][i];
  }
  return sum;
}

template <typename Real, int Kind, bool Contiguous, bool Thin, int W = Width<Kind>()>
inline void Spread(const Nodes<W, Thin>& s, const Real (&w)[3][W], Real v, Real* __restrict f) {
  for (int i = 0; i < W; ++i) {
    const Real vi = v * w[0][i];
    for (int j = 0; j < W; ++j) {
      Real* row = f + s.offset[0][i] + s.offset[1][j];
      const Real vij = vi * w[1][j];
      for (int k = 0; k < W; ++k) (Contiguous ? row[s.first + k] : row[s.last[k]]) += vij * w[2][k];
    }
  }
}

// Point p's weights out of a run's stencils, axis by axis.
template <typename Real, int Kind, int W>
inline void PointWeights(const Stencils<Real, Kind, W>& s, int64_t p, Real (&w)[3][W]) {
  for (int a = 0; a < 3; ++a)
    for (int k = 0; k < W; ++k) w[a][k] = s.weight[a][k][p];
}

constexpr int64_t kAhead = 8;

// The first node of each row of point p's window, every batch entry, asked of the memory ahead of its use
// (Write: for a read-modify-write, the scatter's).
template <int Write, bool Thin, typename Real, int Kind, int W>
inline void Prefetch(const Geometry& g, const Stencils<Real, Kind, W>& s, int64_t p, const Real* field) {
  const Nodes<W, Thin> nodes(g, s, p);
  const int64_t volume = g.volume();
  for (int i = 0; i < W; ++i)
    for (int j = 0; j < W; ++j) {
      const Real* row = field + nodes.offset[0][i] + nodes.offset[1][j] + nodes.first;
      for (int64_t b = 0; b < g.batch; ++b) __builtin_prefetch(row + b * volume, Write);
    }
}

template <typename Real, int Kind, bool Thin>
void GatherRange(const Geometry& g, const Real* field, const Real* points, const bool* live, Real* out, int64_t begin,
                 int64_t end) {
  constexpr int W = Width<Kind>();
  const int64_t volume = g.volume();
  const Real missing = g.outside == 2 ? std::numeric_limits<Real>::quiet_NaN() : Real(0);
  Stencils<Real, Kind> s;
  for (int64_t run = begin; run < end; run += kRun) {
    const int64_t count = std::min(kRun, end - run);
    if (live != nullptr && std::none_of(live + run, live + run + count, [](bool x) { return x; })) {
      for (int64_t b = 0; b < g.batch; ++b) std::fill(out + b * g.points + run, out + b * g.points + run + count, 0);
      continue;  // a run of empty slots (owned particles fill a device's first slots): no stencil computed
    }
    // an empty slot's stale position among occupied ones is read too (a vector lane) but never used
    s.compute(g, points + 3 * run, count);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t p = run + i;
      if ((live != nullptr && !live[p]) || !s.inside[i]) {  // an empty slot gives 0
        const Real value = live != nullptr && !live[p] ? Real(0) : missing;
        for (int64_t b = 0; b < g.batch; ++b) out[b * g.points + p] = value;
        continue;
      }
      if (i + kAhead < count) Prefetch<0, Thin>(g, s, i + kAhead, field);
      const Nodes<W, Thin> nodes(g, s, i);
      Real w[3][W];
      PointWeights(s, i, w);
      for (int64_t b = 0; b < g.batch; ++b)
        out[b * g.points + p] = nodes.contiguous ? Contract<Real, Kind, true, Thin>(nodes, w, field + b * volume)
                                                 : Contract<Real, Kind, false, Thin>(nodes, w, field + b * volume);
    }
  }
}

template <typename Real, int Kind, bool Thin>
void ScatterRange(const Geometry& g, const Real* values, const Real* points, Real* field, int64_t begin,
                  int64_t end) {
  constexpr int W = Width<Kind>();
  const int64_t volume = g.volume();
  Stencils<Real, Kind> s;
  for (int64_t run = begin; run < end; run += kRun) {
    const int64_t count = std::min(kRun, end - run);
    bool carried = false;  // a run of empty slots carries 0 (owned particles fill a device's first slots)
    for (int64_t b = 0; b < g.batch && !carried; ++b)
      carried = std::any_of(values + b * g.points + run, values + b * g.points + run + count,
                            [](Real v) { return v != 0; });
    if (!carried) continue;
    s.compute(g, points + 3 * run, count);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t p = run + i;
      bool any = false;  // an empty slot carries 0: nothing to add (its stale position never used)
      for (int64_t b = 0; b < g.batch; ++b) any = any || values[b * g.points + p] != 0;
      if (!any || !s.inside[i]) continue;
      if (i + kAhead < count) Prefetch<1, Thin>(g, s, i + kAhead, field);
      const Nodes<W, Thin> nodes(g, s, i);
      Real w[3][W];
      PointWeights(s, i, w);
      for (int64_t b = 0; b < g.batch; ++b) {
        if (nodes.contiguous)
          Spread<Real, Kind, true, Thin>(nodes, w, values[b * g.points + p], field + b * volume);
        else
          Spread<Real, Kind, false, Thin>(nodes, w, values[b * g.points + p], field + b * volume);
      }
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

struct Attributes {
  int64_t window;
  ffi::Span<const int64_t> orders, cut, shape;
  ffi::Span<const double> spacing;
  int64_t reach, outside;
};

// The geometry of a block (B, n0, n1, n2) and points (P, 3); `values` (the gather's result, the scatter's operand)
// must be (B, P): the kernels index it so, and a mismatched one would be read or written past its end.
ffi::Error ReadGeometry(Geometry& g, ffi::AnyBuffer block, ffi::AnyBuffer points, ffi::AnyBuffer values,
                        ffi::AnyBuffer starts, const Attributes& at) {
  auto dims = block.dimensions();
  if (dims.size() != 4 || points.dimensions().size() != 2 || points.dimensions()[1] != 3 ||
      starts.element_type() != ffi::S32 || starts.element_count() != 3)
    return ffi::Error::InvalidArgument("window: a block (B, n0, n1, n2), points (P, 3), starts int32 (3,)");
  if (at.orders.size() != 3 || at.cut.size() != 3 || at.shape.size() != 3 || at.spacing.size() != 3)
    return ffi::Error::InvalidArgument("window: three axes expected");
  if (at.window != kLagrange4 && at.window != kCic && at.window != kTsc)
    return ffi::Error::InvalidArgument("window: unknown window");
  g.batch = dims[0];
  g.points = points.dimensions()[0];
  if (values.dimensions().size() != 2 || values.dimensions()[0] != g.batch || values.dimensions()[1] != g.points)
    return ffi::Error::InvalidArgument("window: values (B, P) for a block (B, n0, n1, n2) and points (P, 3)");
  g.window = at.window;
  g.reach = at.reach;
  g.outside = at.outside;
  g.width = at.window == kCic ? 2 : 4;
  g.below = at.window == kCic ? 0 : 1;
  g.thin = false;
  const int32_t* start = reinterpret_cast<const int32_t*>(starts.untyped_data());
  for (int a = 0; a < 3; ++a) {
    g.n[a] = dims[a + 1];
    g.shape[a] = at.shape[a];
    g.start[a] = start[a];
    g.cut[a] = at.cut[a];
    g.orders[a] = at.orders[a];
    g.spacing[a] = at.spacing[a];
    const int64_t held = g.cut[a] ? g.n[a] - (g.width - 1) - 2 * g.reach : g.n[a];
    // an axis held whole may be shorter than the window (its nodes wrap around it: Wrap), but holds the nodes below
    // a point's cell (Stencils::compute wraps the first node once)
    if (held < 1 || (g.cut[a] ? g.n[a] < g.width : g.n[a] < g.below) || g.shape[a] < 1)
      return ffi::Error::InvalidArgument("window: a block shorter than the window and its halo");
    g.thin = g.thin || (!g.cut[a] && g.n[a] < g.width);
    // the stencils hold node indices in int32, and an axis held whole wraps its nodes around the block: a grid
    // longer than such a block would index past it
    if (g.n[a] >= (int64_t{1} << 31) || g.shape[a] >= (int64_t{1} << 31) || g.reach < 0 ||
        (!g.cut[a] && g.shape[a] > g.n[a]) || (g.cut[a] && (g.start[a] < 0 || g.start[a] >= g.shape[a])))
      return ffi::Error::InvalidArgument("window: a block, grid, reach or start out of range");
  }
  return ffi::Error::Success();
}

// The kernels for the geometry's axes: one compiled for axes that all hold the window, one for a thin axis (Wrap).
template <typename Real, int Kind>
void GatherWindow(const Geometry& g, const Real* field, const Real* points, const bool* live, Real* out,
                  int64_t begin, int64_t end) {
  if (g.thin)
    GatherRange<Real, Kind, true>(g, field, points, live, out, begin, end);
  else
    GatherRange<Real, Kind, false>(g, field, points, live, out, begin, end);
}

template <typename Real, int Kind>
void ScatterWindow(const Geometry& g, const Real* values, const Real* points, Real* field, int64_t begin,
                   int64_t end) {
  if (g.thin)
    ScatterRange<Real, Kind, true>(g, values, points, field, begin, end);
  else
    ScatterRange<Real, Kind, false>(g, values, points, field, begin, end);
}

template <typename Real>
void Gather(ffi::ThreadPool& pool, const Geometry& g, const Real* field, const Real* points, const bool* live,
            Real* out, int64_t threads) {
  const int64_t jobs = std::max<int64_t>(1, std::min(threads, g.points));
  RunJobs(pool, jobs, [&](int64_t j) {
    const int64_t begin = RangeStart(g.points, jobs, j), end = RangeStart(g.points, jobs, j + 1);
    if (g.window == kCic)
      GatherWindow<Real, kCic>(g, field, points, live, out, begin, end);
    else if (g.window == kTsc)
      GatherWindow<Real, kTsc>(g, field, points, live, out, begin, end);
    else
      GatherWindow<Real, kLagrange4>(g, field, points, live, out, begin, end);
  });
}

template <typename Real>
void Scatter(ffi::ThreadPool& pool, const Geometry& g, const Real* values, const Real* points, Real* out,
             Real* scratch, int64_t jobs) {
  const int64_t size = g.batch * g.volume();
  RunJobs(pool, jobs, [&](int64_t j) {
    Real* grid = j == 0 ? out : scratch + (j - 1) * size;
    std::memset(grid, 0, sizeof(Real) * size);
    const int64_t begin = RangeStart(g.points, jobs, j), end = RangeStart(g.points, jobs, j + 1);
    if (g.window == kCic)
      ScatterWindow<Real, kCic>(g, values, points, grid, begin, end);
    else if (g.window == kTsc)
      ScatterWindow<Real, kTsc>(g, values, points, grid, begin, end);
    else
      ScatterWindow<Real, kLagrange4>(g, values, points, grid, begin, end);
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
}

ffi::Error GatherHandler(ffi::ThreadPool pool, ffi::AnyBuffer field, ffi::AnyBuffer points, ffi::AnyBuffer starts,
                         ffi::AnyBuffer live, ffi::Result<ffi::AnyBuffer> out, int64_t window,
                         ffi::Span<const int64_t> orders, ffi::Span<const int64_t> cut,
                         ffi::Span<const int64_t> shape, ffi::Span<const double> spacing, int64_t reach,
                         int64_t outside, int64_t threads) {
  const auto type = field.element_type();
  if (points.element_type() != type || out->element_type() != type || (type != ffi::F64 && type != ffi::F32))
    return ffi::Error::InvalidArgument("window gather: field, points and result float32 or float64 alike");
  Geometry g;
  const Attributes at{window, orders, cut, shape, spacing, reach, outside};
  if (auto e = ReadGeometry(g, field, points, *out, starts, at); e.failure()) return e;
  if (live.element_count() != 0 &&
      (live.element_type() != ffi::PRED || static_cast<int64_t>(live.element_count()) != g.points))
    return ffi::Error::InvalidArgument("window gather: live, a bool per point, or none (0 entries)");
  if (g.points == 0 || g.batch == 0) return ffi::Error::Success();
  const bool* mask = live.element_count() != 0 ? reinterpret_cast<const bool*>(live.untyped_data()) : nullptr;
  if (type == ffi::F64)
    Gather<double>(pool, g, reinterpret_cast<const double*>(field.untyped_data()),
                   reinterpret_cast<const double*>(points.untyped_data()), mask,
                   reinterpret_cast<double*>(out->untyped_data()), threads);
  else
    Gather<float>(pool, g, reinterpret_cast<const float*>(field.untyped_data()),
                  reinterpret_cast<const float*>(points.untyped_data()), mask,
                  reinterpret_cast<float*>(out->untyped_data()), threads);
  return ffi::Error::Success();
}

ffi::Error ScatterHandler(ffi::ThreadPool pool, ffi::AnyBuffer values, ffi::AnyBuffer points, ffi::AnyBuffer starts,
                          ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> scratch, int64_t window,
                          ffi::Span<const int64_t> orders, ffi::Span<const int64_t> cut,
                          ffi::Span<const int64_t> shape, ffi::Span<const double> spacing, int64_t reach,
                          int64_t outside, int64_t threads) {
  const auto type = values.element_type();
  if (points.element_type() != type || out->element_type() != type || (type != ffi::F64 && type != ffi::F32))
    return ffi::Error::InvalidArgument("window scatter: values, points and block float32 or float64 alike");
  Geometry g;
  const Attributes at{window, orders, cut, shape, spacing, reach, outside};
  if (auto e = ReadGeometry(g, *out, points, values, starts, at); e.failure()) return e;
  const int64_t jobs = std::max<int64_t>(1, threads);
  if (static_cast<int64_t>(scratch->element_count()) != (jobs - 1) * g.batch * g.volume())
    return ffi::Error::InvalidArgument("window scatter: scratch of (threads - 1) blocks expected");
  if (type == ffi::F64)
    Scatter<double>(pool, g, reinterpret_cast<const double*>(values.untyped_data()),
                    reinterpret_cast<const double*>(points.untyped_data()),
                    reinterpret_cast<double*>(out->untyped_data()), reinterpret_cast<double*>(scratch->untyped_data()),
                    jobs);
  else
    Scatter<float>(pool, g, reinterpret_cast<const float*>(values.untyped_data()),
                   reinterpret_cast<const float*>(points.untyped_data()), reinterpret_cast<float*>(out->untyped_data()),
                   reinterpret_cast<float*>(scratch->untyped_data()), jobs);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorWindowGather, GatherHandler,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("window")
                                  .Attr<ffi::Span<const int64_t>>("orders")
                                  .Attr<ffi::Span<const int64_t>>("cut")
                                  .Attr<ffi::Span<const int64_t>>("shape")
                                  .Attr<ffi::Span<const double>>("spacing")
                                  .Attr<int64_t>("reach")
                                  .Attr<int64_t>("outside")
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
                                  .Attr<ffi::Span<const int64_t>>("cut")
                                  .Attr<ffi::Span<const int64_t>>("shape")
                                  .Attr<ffi::Span<const double>>("spacing")
                                  .Attr<int64_t>("reach")
                                  .Attr<int64_t>("outside")
                                  .Attr<int64_t>("threads"));

// handover_ffi.cc's handlers
extern "C" {
XLA_FFI_Error* SimulatorLeavers(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SimulatorFirst(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SimulatorTakeRows(XLA_FFI_CallFrame* call_frame);
XLA_FFI_Error* SimulatorPutRows(XLA_FFI_CallFrame* call_frame);
}

namespace {

PyObject* Handlers(PyObject*, PyObject*) {
  PyObject* out = PyDict_New();
  if (out == nullptr) return nullptr;
  const std::pair<const char*, void*> handlers[] = {
      {"simulator_window_gather", reinterpret_cast<void*>(SimulatorWindowGather)},
      {"simulator_window_scatter", reinterpret_cast<void*>(SimulatorWindowScatter)},
      {"simulator_leavers", reinterpret_cast<void*>(SimulatorLeavers)},
      {"simulator_first", reinterpret_cast<void*>(SimulatorFirst)},
      {"simulator_take_rows", reinterpret_cast<void*>(SimulatorTakeRows)},
      {"simulator_put_rows", reinterpret_cast<void*>(SimulatorPutRows)},
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
