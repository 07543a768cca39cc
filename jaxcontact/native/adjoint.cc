// The adjoint of the velocity-form contact solve, one fused CPU kernel (an XLA FFI custom call).
//
// solvers/body_lcp.py's solution z* is the fixed point of the projected-Jacobi map
//   T(z) = P(u),  u = z − D⁻¹(A z + b),  A = J M⁻¹ Jᵀ + diag(extra),
// and its reverse-mode derivative needs λ solving (I − ∂T/∂z)ᵀ λ = g at z*. Per row, ∂T is
//   code 1 (S): the projection passes u through (an active normal, a sticking friction row);
//   code 2 / 3: a sliding friction row at +/− its bound μ z_n (coupling · z_n: ∂T/∂z_n = ±coupling);
//   code 0: no derivative (a normal at u ≤ 0, a padded contact).
// With w = D⁻¹ S λ the system splits into (K A w)_S = ĝ_S on the pass-through rows S (K adds to an
// active normal's row its sliding rows' ±coupling times theirs; ĝ likewise) and an explicit formula for
// the other rows: λ_i = g_i − (A w)_i (+ a normal's sliding rows' ±coupling λ_t). (K A)_SS, which is
// not symmetric where friction slides and can be ill-conditioned (two sliding rows at one contact),
// is formed from the contacts that share a body and factorised densely (LU, partial pivoting), in
// double precision whatever the inputs' type: |S| is the number of active rows (tens to a few
// hundred in a heap), and a block Gauss–Seidel on it stalled on sliding contacts. Every leading
// dimension is a batch of worlds, split over threads.
//
// Arguments (per world): rows (C, 2, 3, 6), index (C, 2) int32 (the ground: N), wj (C, 2, 3, 6),
// extra (C, 3), dr (C, 3) (D), code (C, 3) int32, coupling (C, 3), g (C, 3), num_bodies (N + 1,
// via a (N + 1) dummy's shape: v0 (N + 1, 6), unused values).
// Attributes: max_rows (a larger S is left to the caller: λ = 0, residual ∞), threads.
// Results: lambda (C, 3), residual () (max |(K A w − ĝ)_S| / max |ĝ_S|; ∞ if not solved), size () int32 (|S|).

#include <algorithm>
#include <utility>
#include <cmath>
#include <cstdint>
#include <vector>

#include "parallel.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

template <typename T>
void AdjointOne(int64_t C, int64_t N1, const T* rows, const int32_t* index, const T* wj, const T* extra,
                const T* dr, const int32_t* code, const T* coupling, const T* g, int64_t max_rows,
                T* lambda, T* residual_out, int32_t* rows_out) {
  const int64_t ground = N1 - 1;
  std::vector<double> kc(C * 3, 0.0);
  std::vector<int64_t> srow;  // the pass-through rows (c * 3 + i), in order
  std::vector<int64_t> pos(C * 3, -1);
  for (int64_t c = 0; c < C; ++c) {
    for (int t = 1; t < 3; ++t) {  // a sliding row's ±coupling, added to its active normal's row
      const int32_t ct = code[c * 3 + t];
      kc[c * 3 + t] = ct == 2 ? double(coupling[c * 3 + t]) : (ct == 3 ? -double(coupling[c * 3 + t]) : 0.0);
    }
    for (int i = 0; i < 3; ++i)
      if (code[c * 3 + i] == 1) {
        pos[c * 3 + i] = static_cast<int64_t>(srow.size());
        srow.push_back(c * 3 + i);
      }
  }
  const int64_t n = static_cast<int64_t>(srow.size());
  *rows_out = static_cast<int32_t>(n);
  if (n > max_rows) {  // too large for a dense factorisation here: the caller's Krylov solve does it
    for (int64_t k = 0; k < C * 3; ++k) lambda[k] = T(0);
    *residual_out = T(INFINITY);
    return;
  }
  // the pass-through rows of each body: (position in S, side of its contact)
  std::vector<std::vector<std::pair<int64_t, int>>> on_body(N1);
  for (int64_t q = 0; q < n; ++q) {
    const int64_t c = srow[q] / 3;
    for (int side = 0; side < 2; ++side) {
      const int64_t b = index[c * 2 + side];
      if (b != ground) on_body[b].push_back({q, side});
    }
  }
  // visit(q, A_rq) for every pass-through column q that A's row r (any row) meets through a shared
  // body (J M⁻¹ Jᵀ only: the added diagonal is the caller's)
  auto for_each_column = [&](int64_t r, auto&& visit) {
    const int64_t c = r / 3;
    const int i = static_cast<int>(r % 3);
    for (int side = 0; side < 2; ++side) {
      const int64_t b = index[c * 2 + side];
      if (b == ground) continue;
      const T* rr = &rows[((c * 2 + side) * 3 + i) * 6];
      for (auto [q, s2] : on_body[b]) {
        const int64_t c2 = srow[q] / 3;
        const int j = static_cast<int>(srow[q] % 3);
        const T* ww = &wj[((c2 * 2 + s2) * 3 + j) * 6];
        double x = 0;
        for (int k = 0; k < 6; ++k) x += double(rr[k]) * double(ww[k]);
        visit(q, x);
      }
    }
  };
  // A's row r against the pass-through columns, added (times f) into out (n)
  auto add_row = [&](int64_t r, double f, double* out) {
    for_each_column(r, [&](int64_t q, double x) { out[q] += f * x; });
    if (pos[r] >= 0) out[pos[r]] += f * double(extra[r]);
  };
  // H = (K A)[S, S], ĝ = (K g)[S]
  std::vector<double> H(n * n, 0.0), gh(n), w(n);
  double gmax = 0;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t r = srow[p];
    double* row = &H[p * n];
    add_row(r, 1.0, row);
    gh[p] = double(g[r]);
    if (r % 3 == 0)
      for (int t = 1; t < 3; ++t)
        if (kc[r + t] != 0.0) {
          add_row(r + t, kc[r + t], row);
          gh[p] += kc[r + t] * double(g[r + t]);
        }
    gmax = std::max(gmax, std::abs(gh[p]));
  }
  // LU with partial pivoting (H is not symmetric where friction slides)
  std::vector<double> LU(H);
  std::vector<int64_t> piv(n);
  bool ok = true;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::abs(LU[i * n + k]) > std::abs(LU[p * n + k])) p = i;
    piv[k] = p;
    if (!(std::abs(LU[p * n + k]) > 0.0)) {
      ok = false;
      break;
    }
    if (p != k)
      for (int64_t j = 0; j < n; ++j) std::swap(LU[p * n + j], LU[k * n + j]);
    const double inv = 1.0 / LU[k * n + k];
    for (int64_t i = k + 1; i < n; ++i) {
      const double f = LU[i * n + k] * inv;
      if (f == 0.0) continue;
      LU[i * n + k] = f;
      for (int64_t j = k + 1; j < n; ++j) LU[i * n + j] -= f * LU[k * n + j];
    }
  }
  if (!ok) {
    for (int64_t k = 0; k < C * 3; ++k) lambda[k] = T(0);
    *residual_out = T(INFINITY);
    return;
  }
  for (int64_t k = 0; k < n; ++k) w[k] = gh[k];
  for (int64_t k = 0; k < n; ++k) std::swap(w[k], w[piv[k]]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) w[i] -= LU[i * n + j] * w[j];
  for (int64_t i = n - 1; i >= 0; --i) {
    for (int64_t j = i + 1; j < n; ++j) w[i] -= LU[i * n + j] * w[j];
    w[i] /= LU[i * n + i];
  }
  double res = 0;
  for (int64_t p = 0; p < n; ++p) {
    double x = -gh[p];
    for (int64_t q = 0; q < n; ++q) x += H[p * n + q] * w[q];
    res = std::max(res, std::abs(x));
  }
  *residual_out = T(res / std::max(gmax, 1e-300));
  // λ: D w on the pass-through rows; g − A w elsewhere (a normal's sliding rows first: their ±coupling λ)
  for (int64_t c = 0; c < C; ++c) {
    double lam[3];
    for (int i = 2; i >= 0; --i) {
      const int64_t r = c * 3 + i;
      if (pos[r] >= 0) {
        lam[i] = double(dr[r]) * w[pos[r]];
        continue;
      }
      double a = 0;  // (A w)_r: w is zero off the pass-through rows, so r's added diagonal adds nothing
      for_each_column(r, [&](int64_t q, double x) { a += x * w[q]; });
      lam[i] = double(g[r]) - a;
      if (i == 0)
        for (int t = 1; t < 3; ++t) lam[0] += kc[c * 3 + t] * lam[t];
    }
    for (int i = 0; i < 3; ++i) lambda[c * 3 + i] = T(lam[i]);
  }
}

template <ffi::DataType DT>
ffi::Error Adjoint(ffi::Buffer<DT> rows, ffi::Buffer<ffi::S32> index, ffi::Buffer<DT> wj, ffi::Buffer<DT> extra,
                   ffi::Buffer<DT> dr, ffi::Buffer<ffi::S32> code, ffi::Buffer<DT> coupling, ffi::Buffer<DT> g,
                   ffi::Buffer<DT> v0, int64_t max_rows, int64_t threads, ffi::ResultBuffer<DT> lambda,
                   ffi::ResultBuffer<DT> residual, ffi::ResultBuffer<ffi::S32> size) {
  using T = ffi::NativeType<DT>;
  auto gd = g.dimensions();
  auto vd = v0.dimensions();
  if (gd.size() < 2 || vd.size() < 2 || gd.back() != 3 || vd.back() != 6)
    return ffi::Error::InvalidArgument("jaxcontact adjoint: g must be (..., C, 3) and v0 (..., N + 1, 6)");
  const int64_t C = gd[gd.size() - 2];
  const int64_t N1 = vd[vd.size() - 2];
  const int64_t B = static_cast<int64_t>(residual->element_count());
  if (static_cast<int64_t>(g.element_count()) != B * C * 3 || static_cast<int64_t>(rows.element_count()) != B * C * 36)
    return ffi::Error::InvalidArgument("jaxcontact adjoint: inconsistent batch dimensions");
  auto work = [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      AdjointOne<T>(C, N1, rows.typed_data() + b * C * 36, index.typed_data() + b * C * 2, wj.typed_data() + b * C * 36,
                    extra.typed_data() + b * C * 3, dr.typed_data() + b * C * 3, code.typed_data() + b * C * 3,
                    coupling.typed_data() + b * C * 3, g.typed_data() + b * C * 3, max_rows,
                    lambda->typed_data() + b * C * 3, residual->typed_data() + b, size->typed_data() + b);
  };
  jaxcontact::ForBatch(B, threads, 1, work);
  return ffi::Error::Success();
}

}  // namespace

#define JAXCONTACT_ADJOINT(NAME, DT)                              \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME, Adjoint<DT>,                 \
                                ffi::Ffi::Bind()                   \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<ffi::S32>>()  \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<ffi::S32>>()  \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Attr<int64_t>("max_rows")     \
                                    .Attr<int64_t>("threads")      \
                                    .Ret<ffi::Buffer<DT>>()        \
                                    .Ret<ffi::Buffer<DT>>()        \
                                    .Ret<ffi::Buffer<ffi::S32>>());

JAXCONTACT_ADJOINT(JaxcontactAdjointF32, ffi::F32)
JAXCONTACT_ADJOINT(JaxcontactAdjointF64, ffi::F64)
