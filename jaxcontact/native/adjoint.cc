// The adjoint of the velocity-form contact solve, one fused CPU kernel (an XLA FFI custom call).
//
// solvers/body_lcp.py's solution z* is the fixed point of the projected-Jacobi map, per contact c
//   T_c(z) = Π_c(y_c, z_n,c),  y = z − S (A z + b),  A = J M⁻¹ Jᵀ + diag(extra),
// S the rows' steps (1/D; the tangent pair's common step under the elliptic cone) and Π_c the
// contact's projection (normal onto z ≥ 0, tangents onto the box or the disc of its z_n), and its
// reverse-mode derivative needs λ solving (I − ∂T/∂z)ᵀ λ = g at z*. With P_c = ∂Π_c/∂y (3×3) and
// N_c = ∂Π_c/∂z_n (3,) at z* (formed by JAX, body_lcp._projection_jacobians),
//   ∂T/∂z = P (I − S A) + N e_nᵀ   (rows of contact c: P_c (E_c − S_c A_c·) + N_c e_{n(c)}ᵀ).
// A contact whose P_c is zero (separating, padded) has rows of ∂T/∂z only in its own normal's column
// (N_c: a separated contact's tangents at z_n = 0), which no other row reads: the system closes on
// the rows R of the other ("active") contacts, (I − ∂T/∂z)_RRᵀ λ_R = g_R, formed from the contacts that
// share a body and factorised densely (LU, partial pivoting; it is not symmetric where friction slides
// and can be ill-conditioned), in double precision whatever the inputs' type: |R| is three times the
// active contacts (tens to a few hundred in a heap), and a block Gauss–Seidel on it stalled on sliding
// contacts. The other rows follow explicitly: λ_i = g_i − Σ_{k∈R} A_ik S_k (Pᵀλ)_k (+ N_cᵀλ_c at
// such a contact's normal). A sliding disc
// contact's P_c is its rank-one 2×2 tangent block (z_n/s)(I − ûûᵀ) in the scaled coordinates z_k/μ_k,
// its N_c the direction û (scaled by μ); a sliding box row's P row is 0 and its N entry ±μ. Every
// leading dimension is a batch of worlds, split over threads.
//
// Arguments (per world): rows (C, 2, 3, 6), index (C, 2) int32 (the ground: N), wj (C, 2, 3, 6),
// extra (C, 3), step (C, 3) (S), jp (C, 3, 3) (P_c, row-major: output row, input row), jn (C, 3) (N_c),
// g (C, 3), num_bodies (N + 1, via a (N + 1) dummy's shape: v0 (N + 1, 6), unused values).
// Attributes: max_rows (a larger R is left to the caller: λ = 0, residual ∞), threads.
// Results: lambda (C, 3), residual () (max |(Hλ − g)_R| / max |g_R|; ∞ if not solved), size () int32 (|R|).

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
                const T* step, const T* jp, const T* jn, const T* g, int64_t max_rows,
                T* lambda, T* residual_out, int32_t* rows_out) {
  const int64_t ground = N1 - 1;
  std::vector<int64_t> act;  // the active contacts, in order
  for (int64_t c = 0; c < C; ++c) {
    bool any = false;
    for (int k = 0; k < 9; ++k) any = any || jp[c * 9 + k] != T(0);
    if (any) act.push_back(c);
  }
  const int64_t na = static_cast<int64_t>(act.size());
  const int64_t n = 3 * na;
  *rows_out = static_cast<int32_t>(n);
  if (n > max_rows) {  // too large for a dense factorisation here: the caller's Krylov solve does it
    for (int64_t k = 0; k < C * 3; ++k) lambda[k] = T(0);
    *residual_out = T(INFINITY);
    return;
  }
  // the active contacts on each body: (position in act, side of the contact)
  std::vector<std::vector<std::pair<int64_t, int>>> on_body(N1);
  for (int64_t a = 0; a < na; ++a)
    for (int side = 0; side < 2; ++side) {
      const int64_t b = index[act[a] * 2 + side];
      if (b != ground) on_body[b].push_back({a, side});
    }
  // visit(q, A_rq) for every active row q that row i of contact c (any contact) meets through a shared
  // body (J M⁻¹ Jᵀ only: the added diagonal is the caller's)
  auto for_each_column = [&](int64_t c, int i, auto&& visit) {
    for (int side = 0; side < 2; ++side) {
      const int64_t b = index[c * 2 + side];
      if (b == ground) continue;
      const T* rr = &rows[((c * 2 + side) * 3 + i) * 6];
      for (auto [a2, s2] : on_body[b]) {
        const int64_t c2 = act[a2];
        for (int k = 0; k < 3; ++k) {
          const T* ww = &wj[((c2 * 2 + s2) * 3 + k) * 6];
          double x = 0;
          for (int j = 0; j < 6; ++j) x += double(rr[j]) * double(ww[j]);
          visit(3 * a2 + k, x);
        }
      }
    }
  };
  // A on the active rows (its added diagonal included)
  std::vector<double> Arr(n * n, 0.0);
  for (int64_t a = 0; a < na; ++a)
    for (int i = 0; i < 3; ++i) {
      const int64_t r = 3 * a + i;
      for_each_column(act[a], i, [&](int64_t q, double x) { Arr[r * n + q] += x; });
      Arr[r * n + r] += double(extra[act[a] * 3 + i]);
    }
  // H = I − (∂T/∂z)_RRᵀ: H[q, r] = δ_qr − J[r, q], J[r, q] = Σ_j P[i, j] (δ_{(a, j), q} − S_j A[(a, j), q]) + N[i] δ_{q = (a, 0)}
  std::vector<double> H(n * n, 0.0), gh(n), lam(n);
  double gmax = 0;
  for (int64_t a = 0; a < na; ++a) {
    const int64_t c = act[a];
    for (int i = 0; i < 3; ++i) {
      const int64_t r = 3 * a + i;
      for (int j = 0; j < 3; ++j) {
        const double p = double(jp[c * 9 + i * 3 + j]);
        if (p == 0.0) continue;
        const int64_t rj = 3 * a + j;
        const double sj = double(step[c * 3 + j]);
        for (int64_t q = 0; q < n; ++q) H[q * n + r] += p * sj * Arr[rj * n + q];
        H[rj * n + r] -= p;
      }
      H[(3 * a) * n + r] -= double(jn[c * 3 + i]);
      H[r * n + r] += 1.0;
      gh[r] = double(g[c * 3 + i]);
      gmax = std::max(gmax, std::abs(gh[r]));
    }
  }
  // LU with partial pivoting
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
  for (int64_t k = 0; k < n; ++k) lam[k] = gh[k];
  for (int64_t k = 0; k < n; ++k) std::swap(lam[k], lam[piv[k]]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) lam[i] -= LU[i * n + j] * lam[j];
  for (int64_t i = n - 1; i >= 0; --i) {
    for (int64_t j = i + 1; j < n; ++j) lam[i] -= LU[i * n + j] * lam[j];
    lam[i] /= LU[i * n + i];
  }
  double res = 0;
  for (int64_t p = 0; p < n; ++p) {
    double x = -gh[p];
    for (int64_t q = 0; q < n; ++q) x += H[p * n + q] * lam[q];
    res = std::max(res, std::abs(x));
  }
  *residual_out = T(res / std::max(gmax, 1e-300));
  // m = S Pᵀ λ on the active rows; the other rows λ_i = g_i − (A m)_i
  std::vector<double> m(n, 0.0);
  for (int64_t a = 0; a < na; ++a) {
    const int64_t c = act[a];
    for (int j = 0; j < 3; ++j) {
      double x = 0;
      for (int i = 0; i < 3; ++i) x += double(jp[c * 9 + i * 3 + j]) * lam[3 * a + i];
      m[3 * a + j] = double(step[c * 3 + j]) * x;
    }
  }
  std::vector<int64_t> pos(C, -1);
  for (int64_t a = 0; a < na; ++a) pos[act[a]] = a;
  for (int64_t c = 0; c < C; ++c) {
    if (pos[c] >= 0) {
      for (int i = 0; i < 3; ++i) lambda[c * 3 + i] = T(lam[3 * pos[c] + i]);
      continue;
    }
    double out[3];
    for (int i = 2; i >= 0; --i) {  // the tangents first: their N_c λ goes to the normal
      double x = 0;  // (A m)_i: row i is not active, so its added diagonal adds nothing
      for_each_column(c, i, [&](int64_t q, double v) { x += v * m[q]; });
      out[i] = double(g[c * 3 + i]) - x;
      if (i == 0)
        for (int t = 1; t < 3; ++t) out[0] += double(jn[c * 3 + t]) * out[t];
    }
    for (int i = 0; i < 3; ++i) lambda[c * 3 + i] = T(out[i]);
  }
}

template <ffi::DataType DT>
ffi::Error Adjoint(ffi::Buffer<DT> rows, ffi::Buffer<ffi::S32> index, ffi::Buffer<DT> wj, ffi::Buffer<DT> extra,
                   ffi::Buffer<DT> step, ffi::Buffer<DT> jp, ffi::Buffer<DT> jn, ffi::Buffer<DT> g,
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
                    extra.typed_data() + b * C * 3, step.typed_data() + b * C * 3, jp.typed_data() + b * C * 9,
                    jn.typed_data() + b * C * 3, g.typed_data() + b * C * 3, max_rows,
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
                                    .Arg<ffi::Buffer<DT>>()        \
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
