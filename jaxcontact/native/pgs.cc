// Projected Gauss–Seidel in velocity form, one fused CPU kernel (an XLA FFI custom call).
//
// The sweeps of solvers/body_lcp.py's _sweeps_single, written once as a loop that keeps one
// world's contacts and bodies in cache and visits the valid contacts in index order: the same
// iterates, stopping rule and tolerance (to round-off), at C speed. Every leading dimension is a
// batch of worlds (vmap_method="broadcast_all"); the worlds are split over threads.
//
// Arguments (per world; leading batch dimensions first):
//   z0 (C, 3), rows (C, 2, 3, 6), index (C, 2) int32 (the ground: N), wj (C, 2, 3, 6) = M⁻¹Jᵀ,
//   extra (C, 3) added diagonal, v0 (N + 1, 6) velocities at z0 (the last row the ground, 0),
//   bias (C, 3), coupling (C, 3) (friction bound per tangent row), valid (C,) int32, tol ().
// Attributes: max_iter, fixed (run exactly max_iter sweeps), threads (0: hardware), cone (1: the elliptic
// cone, the tangent pair one block after the normal with lcp.disc_step's common step and
// lcp.project_disc's projection; 0: each tangent clipped on its own, the box).
// Results: z (C, 3), change () (the last sweep's largest |A_ii Δz_i|), sweeps () int32.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "parallel.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

template <typename T>
void SolveOne(int64_t C, int64_t N1, const T* z0, const T* rows, const int32_t* index, const T* wj,
              const T* extra, const T* v0, const T* bias, const T* coupling, const int32_t* valid, T tol,
              int64_t max_iter, bool fixed, bool disc, T* z, T* change_out, int32_t* sweeps_out) {
  std::vector<T> v(v0, v0 + N1 * 6);
  std::copy(z0, z0 + C * 3, z);
  std::vector<int64_t> order;
  order.reserve(C);
  for (int64_t c = 0; c < C; ++c)
    if (valid[c]) order.push_back(c);
  // each valid contact's 3×3 block of A (its own rows): G = Σ_s rows_s · wj_sᵀ + diag(extra)
  std::vector<T> G(order.size() * 9);
  for (size_t o = 0; o < order.size(); ++o) {
    const int64_t c = order[o];
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) {
        T s = 0;
        for (int side = 0; side < 2; ++side)
          for (int j = 0; j < 6; ++j)
            s += rows[((c * 2 + side) * 3 + i) * 6 + j] * wj[((c * 2 + side) * 3 + k) * 6 + j];
        G[o * 9 + i * 3 + k] = s + (i == k ? extra[c * 3 + i] : T(0));
      }
  }
  T change = std::numeric_limits<T>::infinity();
  int32_t it = 0;
  while (it < max_iter && (fixed || change > tol)) {
    change = 0;
    for (size_t o = 0; o < order.size(); ++o) {
      const int64_t c = order[o];
      const T* g = &G[o * 9];
      T* va = &v[index[c * 2] * 6];
      T* vb = &v[index[c * 2 + 1] * 6];
      const T* r = &rows[c * 36];
      T w[3];
      for (int k = 0; k < 3; ++k) {
        T s = 0;
        for (int j = 0; j < 6; ++j) s += r[k * 6 + j] * va[j] + r[18 + k * 6 + j] * vb[j];
        w[k] = s + bias[c * 3 + k] + extra[c * 3 + k] * z[c * 3 + k];
      }
      T zc[3] = {z[c * 3], z[c * 3 + 1], z[c * 3 + 2]};
      const T zold[3] = {zc[0], zc[1], zc[2]};
      for (int k = 0; k < (disc ? 1 : 3); ++k) {
        T zk = zc[k] - w[k] / g[k * 3 + k];
        if (k == 0) {
          zk = std::max(zk, T(0));
        } else {
          const T bound = coupling[c * 3 + k] * zc[0];
          zk = std::min(std::max(zk, -bound), bound);
        }
        const T d = zk - zc[k];
        for (int i = 0; i < 3; ++i) w[i] += g[i * 3 + k] * d;
        zc[k] = zk;
      }
      if (disc) {  // the tangent pair: one common step, then scaled onto the ellipse (lcp.project_disc)
        const T m1 = coupling[c * 3 + 1], m2 = coupling[c * 3 + 2];
        const T top = std::max(m1 * m1 * g[4], m2 * m2 * g[8]);
        const T alpha = top > 0 ? T(1) / top : T(0);
        const T y1 = zc[1] - alpha * m1 * m1 * w[1], y2 = zc[2] - alpha * m2 * m2 * w[2];
        const T l1 = m1 > 0 ? y1 / m1 : T(0), l2 = m2 > 0 ? y2 / m2 : T(0);
        const T ss = l1 * l1 + l2 * l2;
        const T f = ss > zc[0] * zc[0] ? zc[0] / std::sqrt(ss) : T(1);
        zc[1] = m1 > 0 ? y1 * f : T(0);
        zc[2] = m2 > 0 ? y2 * f : T(0);
      }
      T dz[3];
      for (int k = 0; k < 3; ++k) {
        dz[k] = zc[k] - zold[k];
        change = std::max(change, std::abs(g[k * 3 + k] * dz[k]));
        z[c * 3 + k] = zc[k];
      }
      const T* wa = &wj[c * 36];
      const T* wb = wa + 18;
      for (int j = 0; j < 6; ++j) {
        va[j] += dz[0] * wa[j] + dz[1] * wa[6 + j] + dz[2] * wa[12 + j];
        vb[j] += dz[0] * wb[j] + dz[1] * wb[6 + j] + dz[2] * wb[12 + j];
      }
      std::fill(&v[(N1 - 1) * 6], &v[N1 * 6], T(0));  // the ground neither moves nor is moved
    }
    ++it;
  }
  *change_out = change;
  *sweeps_out = it;
}

template <ffi::DataType DT>
ffi::Error Pgs(ffi::Buffer<DT> z0, ffi::Buffer<DT> rows, ffi::Buffer<ffi::S32> index, ffi::Buffer<DT> wj,
               ffi::Buffer<DT> extra, ffi::Buffer<DT> v0, ffi::Buffer<DT> bias, ffi::Buffer<DT> coupling,
               ffi::Buffer<ffi::S32> valid, ffi::Buffer<DT> tol, int64_t max_iter, int64_t fixed,
               int64_t threads, int64_t cone, ffi::ResultBuffer<DT> z, ffi::ResultBuffer<DT> change,
               ffi::ResultBuffer<ffi::S32> sweeps) {
  using T = ffi::NativeType<DT>;
  auto zd = z0.dimensions();
  auto vd = v0.dimensions();
  if (zd.size() < 2 || vd.size() < 2 || zd.back() != 3 || vd.back() != 6)
    return ffi::Error::InvalidArgument("jaxcontact pgs: z0 must be (..., C, 3) and v0 (..., N + 1, 6)");
  const int64_t C = zd[zd.size() - 2];
  const int64_t N1 = vd[vd.size() - 2];
  const int64_t B = C > 0 ? static_cast<int64_t>(z0.element_count()) / (C * 3)
                          : static_cast<int64_t>(tol.element_count());
  if (static_cast<int64_t>(tol.element_count()) != B || static_cast<int64_t>(v0.element_count()) != B * N1 * 6)
    return ffi::Error::InvalidArgument("jaxcontact pgs: inconsistent batch dimensions");
  auto work = [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      SolveOne<T>(C, N1, z0.typed_data() + b * C * 3, rows.typed_data() + b * C * 36,
                  index.typed_data() + b * C * 2, wj.typed_data() + b * C * 36, extra.typed_data() + b * C * 3,
                  v0.typed_data() + b * N1 * 6, bias.typed_data() + b * C * 3, coupling.typed_data() + b * C * 3,
                  valid.typed_data() + b * C, tol.typed_data()[b], max_iter, fixed != 0, cone != 0,
                  z->typed_data() + b * C * 3, change->typed_data() + b, sweeps->typed_data() + b);
  };
  jaxcontact::ForBatch(B, threads, 1, work);
  return ffi::Error::Success();
}

}  // namespace

#define JAXCONTACT_PGS(NAME, DT)                                   \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME, Pgs<DT>,                      \
                                ffi::Ffi::Bind()                    \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<ffi::S32>>()   \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Arg<ffi::Buffer<ffi::S32>>()   \
                                    .Arg<ffi::Buffer<DT>>()         \
                                    .Attr<int64_t>("max_iter")      \
                                    .Attr<int64_t>("fixed")         \
                                    .Attr<int64_t>("threads")       \
                                    .Attr<int64_t>("cone")          \
                                    .Ret<ffi::Buffer<DT>>()         \
                                    .Ret<ffi::Buffer<DT>>()         \
                                    .Ret<ffi::Buffer<ffi::S32>>());

JAXCONTACT_PGS(JaxcontactPgsF32, ffi::F32)
JAXCONTACT_PGS(JaxcontactPgsF64, ffi::F64)
