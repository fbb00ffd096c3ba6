// The hand-over of owned particles between devices (simulator/fft/owned.py), XLA FFI custom calls on CPU, part of
// the extension simulator.fft._particles (its handlers' table: particles_ffi.cc):
//   simulator_leavers: one pass over a device's slots along one split axis: the slots whose particle left the
//     device's block for the next device up or down (the first `rows` of each, in slot order), the occupancy
//     without them, and how many left each way or further;
//   simulator_first: the indices of the first set entries of a mask (the empty slots the arrivals fill);
//   simulator_take_rows, simulator_put_rows: the rows at such indices (the message to a neighbour), and rows
//     written at such indices (the arrivals), each touching only the rows that move, where XLA's gather and
//     scatter walk every row of the fixed-size buffers.
//
// The owner of a particle is the one the XLA path computes (owned.py's owner: the cell floor(x (1/dx)) in the
// positions' precision, wrapped, then the integers' quotient by the block's cells), so that both paths, and the
// windows' kernels (particles_ffi.cc and window.py, which take a point's cell the same way), agree on every
// point, one on a block's face included.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Slots whose owners are computed in one vector loop before the branchy pass over them.
constexpr int64_t kOwnerRun = 256;

// The owner of a cell c (an integer in floating point) of an axis of `cells` cells split into blocks of `block`,
// as owned.py's owner takes it: the floor-mod wrap, then the integers' quotient by the block. For c in
// [-cells, 2 cells), where the cell of every wrapped position lies (a coordinate just below L may round to
// `cells`), the wrap is one select either way, exact; the quotient is floor((c + 1/2) / block) as a product by
// 1/block in double: c + 1/2 lies at least 1/(2 block) from an integer quotient and the product errs by at most
// devices 2^-52 (cells < 2^31), so the floor is exact. A wrap by divisions (no vector division in the loop) takes
// the other c, in the scalar pass, the quotient's floor corrected once as owner's (exact while |c| < 2^24 in
// float32, past which the position's cell is not exact anyway); not finite: no owner (-1).
template <typename Real>
inline bool Wraps(Real cell, Real cells) {
  return cell >= -cells && cell < 2 * cells;
}

template <typename Real>
inline double Owner(Real wrapped, double inverse_block) {
  return std::floor((static_cast<double>(wrapped) + 0.5) * inverse_block);
}

template <typename Real>
inline Real FastWrap(Real cell, Real cells) {
  return cell < 0 ? cell + cells : (cell >= cells ? cell - cells : cell);
}

template <typename Real>
inline double SlowOwner(Real cell, Real cells, double inverse_block) {
  Real wrapped = cell - cells * std::floor(cell / cells);
  wrapped += wrapped < Real(0) ? cells : Real(0);
  wrapped -= wrapped >= cells ? cells : Real(0);
  if (!(wrapped >= Real(0) && wrapped < cells)) return -1.0;
  return Owner(wrapped, inverse_block);
}

// The leavers of one block along one axis. x (slots, 3), live (slots,); `me` this device's index along the axis
// among `devices`, each holding n / devices of the axis's n cells of width dx. A live particle whose owner is
// the next device up (delta 1) goes up, the next down (delta devices - 1, with more than two devices: with two
// the one neighbour is reached going up) goes down; a particle further away, or whose coordinate is not finite,
// counts as far and is lost, its slot freed as every lost particle's (the caller reports it; the run stops), so
// that the next axis and the next step do not count it again. up, down: the first `rows` leavers' slots in slot
// order, then `slots`; stay: live less every leaver up or down (those past `rows` too: the caller counts them
// lost) and every far one; counts: leavers up, down (all of them, past `rows` too), far.
template <typename Real>
void Leavers(const Real* x, const bool* live, int64_t slots, int64_t axis, int64_t n, double dx, int64_t devices,
             int64_t me, int64_t rows, int32_t* up, int32_t* down, bool* stay, int32_t* counts) {
  // the cell as the windows take it (particles_ffi.cc, window.py): times the spacing's reciprocal in Real
  const Real cells = static_cast<Real>(n), inverse = static_cast<Real>(1.0 / dx);
  const double inverse_block = 1.0 / static_cast<double>(n / devices), last = static_cast<double>(devices);
  int64_t ups = 0, downs = 0, far = 0;
  Real cell[kOwnerRun];
  double owner[kOwnerRun];
  for (int64_t base = 0; base < slots; base += kOwnerRun) {
    const int64_t m = std::min(kOwnerRun, slots - base);
    bool any = false;
    for (int64_t j = 0; j < m; ++j) any |= live[base + j];
    if (!any) {  // a run of empty slots (about half of them at a capacity of 2): their positions are not read
      std::memset(stay + base, 0, m);
      continue;
    }
    for (int64_t j = 0; j < m; ++j) cell[j] = x[3 * (base + j) + axis];
    for (int64_t j = 0; j < m; ++j) cell[j] = std::floor(cell[j] * inverse);
    for (int64_t j = 0; j < m; ++j) owner[j] = Owner(FastWrap(cell[j], cells), inverse_block);
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = base + j;
      stay[i] = live[i];
      if (!live[i]) continue;
      if (!Wraps(cell[j], cells)) owner[j] = SlowOwner(cell[j], cells, inverse_block);
      if (!(owner[j] >= 0 && owner[j] < last)) {  // not finite
        ++far;
        stay[i] = false;
        continue;
      }
      int64_t delta = static_cast<int64_t>(owner[j]) - me;
      if (delta < 0) delta += devices;
      if (delta == 0) continue;
      if (delta == 1) {
        if (ups < rows) up[ups] = static_cast<int32_t>(i);
        ++ups;
        stay[i] = false;
      } else if (delta == devices - 1 && devices > 2) {
        if (downs < rows) down[downs] = static_cast<int32_t>(i);
        ++downs;
        stay[i] = false;
      } else {
        ++far;
        stay[i] = false;
      }
    }
  }
  for (int64_t k = ups; k < rows; ++k) up[k] = static_cast<int32_t>(slots);
  for (int64_t k = downs; k < rows; ++k) down[k] = static_cast<int32_t>(slots);
  counts[0] = static_cast<int32_t>(ups);
  counts[1] = static_cast<int32_t>(downs);
  counts[2] = static_cast<int32_t>(far);
}

ffi::Error LeaversHandler(ffi::AnyBuffer x, ffi::AnyBuffer live, ffi::AnyBuffer index,
                          ffi::Result<ffi::AnyBuffer> up, ffi::Result<ffi::AnyBuffer> down,
                          ffi::Result<ffi::AnyBuffer> stay, ffi::Result<ffi::AnyBuffer> counts, int64_t axis,
                          int64_t n, double spacing, int64_t devices) {
  const auto dims = x.dimensions();
  const ffi::DataType type = x.element_type();
  if ((type != ffi::F32 && type != ffi::F64) || dims.size() != 2 || dims[1] != 3)
    return ffi::Error::InvalidArgument("leavers: positions (slots, 3), float32 or float64");
  const int64_t slots = dims[0], rows = static_cast<int64_t>(up->element_count());
  if (live.element_type() != ffi::PRED || static_cast<int64_t>(live.element_count()) != slots ||
      index.element_type() != ffi::S32 || index.element_count() != 1 || up->element_type() != ffi::S32 ||
      down->element_type() != ffi::S32 || static_cast<int64_t>(down->element_count()) != rows ||
      stay->element_type() != ffi::PRED || static_cast<int64_t>(stay->element_count()) != slots ||
      counts->element_type() != ffi::S32 || counts->element_count() != 3)
    return ffi::Error::InvalidArgument("leavers: a bool live per slot, an int32 device index, int32 results");
  if (axis < 0 || axis > 2 || devices < 2 || n < devices || n % devices != 0 || n >= (int64_t{1} << 31) ||
      slots >= (int64_t{1} << 31) || !(spacing > 0))
    return ffi::Error::InvalidArgument("leavers: axis in 0..2, 2 or more devices dividing the axis's cells");
  const int64_t me = *reinterpret_cast<const int32_t*>(index.untyped_data());
  if (me < 0 || me >= devices) return ffi::Error::InvalidArgument("leavers: device index out of range");
  const bool* l = reinterpret_cast<const bool*>(live.untyped_data());
  int32_t* u = reinterpret_cast<int32_t*>(up->untyped_data());
  int32_t* d = reinterpret_cast<int32_t*>(down->untyped_data());
  bool* s = reinterpret_cast<bool*>(stay->untyped_data());
  int32_t* c = reinterpret_cast<int32_t*>(counts->untyped_data());
  if (type == ffi::F64)
    Leavers<double>(reinterpret_cast<const double*>(x.untyped_data()), l, slots, axis, n, spacing, devices, me, rows,
                    u, d, s, c);
  else
    Leavers<float>(reinterpret_cast<const float*>(x.untyped_data()), l, slots, axis, n, spacing, devices, me, rows, u,
                   d, s, c);
  return ffi::Error::Success();
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

// Whether `a` holds rows of x's: rank 1 or more, the same element type and the same shape past the first axis.
bool RowsOf(const ffi::AnyBuffer& a, const ffi::AnyBuffer& x) {
  const auto da = a.dimensions(), dx = x.dimensions();
  return da.size() >= 1 && da.size() == dx.size() && a.element_type() == x.element_type() &&
         std::equal(da.begin() + 1, da.end(), dx.begin() + 1);
}

// The bytes of one row of an array of rank 1 or more whose first axis is its rows.
int64_t RowBytes(const ffi::AnyBuffer& x) {
  const auto dims = x.dimensions();
  int64_t bytes = static_cast<int64_t>(ffi::ByteWidth(x.element_type()));
  for (size_t i = 1; i < dims.size(); ++i) bytes *= dims[i];
  return bytes;
}

// out[k] = x[rows[k]] for the rows k whose index lies in x; zeros from the first that does not (the indices of
// `first` are in order, the missing ones last).
ffi::Error TakeRowsHandler(ffi::AnyBuffer x, ffi::AnyBuffer rows, ffi::Result<ffi::AnyBuffer> out) {
  // the result has one row per index: it is written row by row up to the last
  if (rows.element_type() != ffi::S32 || !RowsOf(x, x) || !RowsOf(*out, x) ||
      out->dimensions()[0] != static_cast<int64_t>(rows.element_count()))
    return ffi::Error::InvalidArgument("take rows: int32 rows, a result of x's rows, one per index");
  const int64_t width = RowBytes(x), n = x.dimensions()[0];
  const int32_t* r = reinterpret_cast<const int32_t*>(rows.untyped_data());
  const char* from = reinterpret_cast<const char*>(x.untyped_data());
  char* to = reinterpret_cast<char*>(out->untyped_data());
  const int64_t count = static_cast<int64_t>(rows.element_count());
  int64_t k = 0;
  for (; k < count && r[k] >= 0 && r[k] < n; ++k) std::memcpy(to + k * width, from + r[k] * width, width);
  std::memset(to + k * width, 0, (count - k) * width);
  return ffi::Error::Success();
}

// out = x with row targets[k] set to rows[k] wherever targets[k] lies in x (the others dropped); out is x's
// buffer (aliased by the caller), so only those rows are written.
ffi::Error PutRowsHandler(ffi::AnyBuffer x, ffi::AnyBuffer rows, ffi::AnyBuffer targets,
                          ffi::Result<ffi::AnyBuffer> out) {
  // every row of `rows` is read whole (an empty one of another width too, were it not refused here)
  if (targets.element_type() != ffi::S32 || !RowsOf(x, x) || !RowsOf(rows, x) ||
      out->element_type() != x.element_type() || out->size_bytes() != x.size_bytes() ||
      rows.dimensions()[0] != static_cast<int64_t>(targets.element_count()))
    return ffi::Error::InvalidArgument("put rows: rows of x's, one int32 target each");
  const int64_t width = RowBytes(x), n = x.dimensions()[0];
  char* to = reinterpret_cast<char*>(out->untyped_data());
  if (to != x.untyped_data()) std::memcpy(to, x.untyped_data(), x.size_bytes());
  const int32_t* t = reinterpret_cast<const int32_t*>(targets.untyped_data());
  const char* from = reinterpret_cast<const char*>(rows.untyped_data());
  const int64_t count = static_cast<int64_t>(targets.element_count());
  for (int64_t k = 0; k < count; ++k)
    if (t[k] >= 0 && t[k] < n) std::memcpy(to + t[k] * width, from + k * width, width);
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorLeavers, LeaversHandler,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("axis")
                                  .Attr<int64_t>("n")
                                  .Attr<double>("spacing")
                                  .Attr<int64_t>("devices"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorFirst, FirstHandler,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorTakeRows, TakeRowsHandler,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(SimulatorPutRows, PutRowsHandler,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());
