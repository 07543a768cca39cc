// The narrow phase of body–body contact, one fused CPU kernel (an XLA FFI custom call).
//
// collision.py's _hull_hull written once as a loop over pairs: the separating-axis test (face axes,
// edge axes by pairs of edge directions or by Gregorius' per-edge-pair test), the clipping of the
// incident face against the reference face, the reduction to `num` points, and the edge–edge
// contact; the same choices and values as the pure-JAX reference, to round-off. Every leading
// dimension is a batch of pairs (vmap_method="broadcast_all"), split over threads.
//
// Arguments (per pair): va (Ka, 3), pos_a (3), quat_a (4, w x y z), vb (Kb, 3), pos_b (3),
// quat_b (4), margin (). The pair's static topology comes as attributes (collision._static).
// Results: point (num, 3), normal (3), phi (num), valid (num) int32, kind () int32, and the
// discrete choices (6 + num) int32: use_b, use_edge, reference face, incident face, edge of a,
// edge of b, then the kept candidates (collision._evaluate recomputes the values from them, with
// their derivatives).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "parallel.h"
#include "vec3.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using I32s = ffi::Span<const int32_t>;
using namespace jaxcontact;

struct Topo {
  I32s fa, fb, sa, sb, ea, eb, efa, efb, via, vib, ca, cb, vca, vcb;
  int64_t width, support, num;
  double face_b_bias0, face_b_bias1, edge_bias0, edge_bias1, parallel_sine, point_tol, far;
};


template <typename T>
inline V3<T> Rot(const T* r, V3<T> v) {
  return {r[0] * v.x + r[1] * v.y + r[2] * v.z, r[3] * v.x + r[4] * v.y + r[5] * v.z,
          r[6] * v.x + r[7] * v.y + r[8] * v.z};
}

// first index of the maximum (collision._argmax)
template <typename T>
inline int64_t ArgMax(const std::vector<T>& x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// unit normal (Newell's sum of the fan's cross products) of a padded polygon
template <typename T>
V3<T> PolyNormal(const std::vector<V3<T>>& p, int64_t W) {
  V3<T> a{0, 0, 0};
  for (int64_t k = 0; k < W; ++k) a = add(a, cross(sub(p[k], p[0]), sub(p[(k + 1) % W], p[0])));
  return mul(a, T(1) / std::sqrt(std::max(dot(a, a), T(1e-30))));
}

template <typename T>
struct Scratch {  // one thread's work arrays, reused from pair to pair
  std::vector<V3<T>> va, vb, wa, wb, na_body, nb_body, na, nb, ref, inc, y, e_ref, e_inc, side_ref, side_inc, poly;
  std::vector<T> da, db, sep_a, sep_b, len_ref, len_inc, off_ref, off_inc, phi, work, mind;
  std::vector<V3<T>> pa, pb, ua, ub;
  std::vector<char> mask, oks;
  std::vector<int64_t> idx;
};

template <typename T>
void FaceNormals(const std::vector<V3<T>>& v, I32s faces, int64_t W, std::vector<V3<T>>& n, std::vector<T>& d,
                 std::vector<V3<T>>& p) {
  const int64_t F = faces.size() / W;
  n.resize(F);
  d.resize(F);
  p.resize(W);
  for (int64_t f = 0; f < F; ++f) {
    for (int64_t k = 0; k < W; ++k) p[k] = v[faces[f * W + k]];
    n[f] = PolyNormal(p, W);
    d[f] = dot(n[f], p[0]);
  }
}

template <typename T>
void Pair(const Topo& t, const T* va_in, const T* pos_a, const T* quat_a, const T* vb_in, const T* pos_b,
          const T* quat_b, T margin, int64_t Ka, int64_t Kb, Scratch<T>& s, T* point, T* normal, T* phi_out,
          int32_t* valid_out, int32_t* kind_out, int32_t* choice) {
  const int64_t W = t.width, num = t.num;
  T ra[9], rb[9];
  QuatToMat(quat_a, ra);
  QuatToMat(quat_b, rb);
  const V3<T> xa{pos_a[0], pos_a[1], pos_a[2]}, xb{pos_b[0], pos_b[1], pos_b[2]};
  std::vector<V3<T>>& va = s.va;
  std::vector<V3<T>>& vb = s.vb;
  va.resize(Ka);
  vb.resize(Kb);
  for (int64_t k = 0; k < Ka; ++k) va[k] = {va_in[k * 3], va_in[k * 3 + 1], va_in[k * 3 + 2]};
  for (int64_t k = 0; k < Kb; ++k) vb[k] = {vb_in[k * 3], vb_in[k * 3 + 1], vb_in[k * 3 + 2]};
  s.wa.resize(Ka);
  s.wb.resize(Kb);
  for (int64_t k = 0; k < Ka; ++k) s.wa[k] = add(xa, Rot(ra, va[k]));
  for (int64_t k = 0; k < Kb; ++k) s.wb[k] = add(xb, Rot(rb, vb[k]));

  // --- the separating-axis test ---
  T size_a = 0, size_b = 0;
  for (int32_t i : t.via) size_a = std::max(size_a, std::sqrt(dot(va[i], va[i])));
  for (int32_t i : t.vib) size_b = std::max(size_b, std::sqrt(dot(vb[i], vb[i])));
  const T size = std::min(size_a, size_b);
  FaceNormals(va, t.fa, W, s.na_body, s.da, s.poly);
  FaceNormals(vb, t.fb, W, s.nb_body, s.db, s.poly);
  const int64_t Fa = s.na_body.size(), Fb = s.nb_body.size();
  s.na.resize(Fa);
  s.nb.resize(Fb);
  for (int64_t f = 0; f < Fa; ++f) {
    s.na[f] = Rot(ra, s.na_body[f]);
    s.da[f] += dot(s.na[f], xa);
  }
  for (int64_t f = 0; f < Fb; ++f) {
    s.nb[f] = Rot(rb, s.nb_body[f]);
    s.db[f] += dot(s.nb[f], xb);
  }
  const int64_t Pa = t.via.size(), Pb = t.vib.size();
  s.pa.resize(Pa);
  s.pb.resize(Pb);
  for (int64_t k = 0; k < Pa; ++k) s.pa[k] = add(Rot(ra, va[t.via[k]]), xa);
  for (int64_t k = 0; k < Pb; ++k) s.pb[k] = add(Rot(rb, vb[t.vib[k]]), xb);
  s.sep_a.resize(Fa);
  s.sep_b.resize(Fb);
  const T inf = std::numeric_limits<T>::infinity();
  for (int64_t f = 0; f < Fa; ++f) {
    T m = inf;
    for (int64_t k = 0; k < Pb; ++k) m = std::min(m, dot(s.na[f], s.pb[k]));
    s.sep_a[f] = m - s.da[f];
  }
  // a separating axis farther than the margin: no contact (the reference's valid is false in every
  // slot, its kind NONE); the point and normal of such a pair are never used
  auto apart = [&]() {
    V3<T> d = sub(xb, xa);
    const T len = std::sqrt(dot(d, d));
    d = len > 0 ? mul(d, T(1) / len) : V3<T>{0, 0, 1};
    const V3<T> mid = mul(add(xa, xb), T(0.5));
    normal[0] = d.x, normal[1] = d.y, normal[2] = d.z;
    for (int64_t j = 0; j < num; ++j) {
      point[j * 3] = mid.x, point[j * 3 + 1] = mid.y, point[j * 3 + 2] = mid.z;
      phi_out[j] = T(t.far);
      valid_out[j] = 0;
    }
    *kind_out = 0;
    std::fill(choice, choice + 6 + num, 0);
  };
  for (int64_t f = 0; f < Fa; ++f)
    if (s.sep_a[f] > margin) return apart();
  for (int64_t f = 0; f < Fb; ++f) {
    T m = inf;
    for (int64_t k = 0; k < Pa; ++k) m = std::min(m, dot(s.nb[f], s.pa[k]));
    s.sep_b[f] = m - s.db[f];
    if (s.sep_b[f] > margin) return apart();
  }
  T best_e = -inf;
  int64_t ka = 0, kb = 0;
  const T ps2 = T(t.parallel_sine) * T(t.parallel_sine);
  if (t.support) {
    const int64_t Da = t.ca.size(), Db = t.cb.size();
    s.ua.resize(Da);
    s.ub.resize(Db);
    for (int64_t i = 0; i < Da; ++i)
      s.ua[i] = Rot(ra, sub(va[t.ea[t.ca[i] * 2 + 1]], va[t.ea[t.ca[i] * 2]]));
    for (int64_t i = 0; i < Db; ++i)
      s.ub[i] = Rot(rb, sub(vb[t.eb[t.cb[i] * 2 + 1]], vb[t.eb[t.cb[i] * 2]]));
    int64_t best = 0;
    T best_plus = 0, best_minus = 0;
    V3<T> best_u{0, 0, 0};
    bool first = true;
    for (int64_t i = 0; i < Da; ++i)
      for (int64_t j = 0; j < Db; ++j) {
        const V3<T> axis = cross(s.ua[i], s.ub[j]);
        const T len2 = dot(axis, axis);
        const bool ok = len2 > ps2 * dot(s.ua[i], s.ua[i]) * dot(s.ub[j], s.ub[j]);
        const V3<T> u = mul(axis, T(1) / std::sqrt(ok ? len2 : T(1)));
        T amax = -inf, amin = inf, bmax = -inf, bmin = inf;
        for (int64_t k = 0; k < Pa; ++k) {
          const T p = dot(u, s.pa[k]);
          amax = std::max(amax, p);
          amin = std::min(amin, p);
        }
        for (int64_t k = 0; k < Pb; ++k) {
          const T p = dot(u, s.pb[k]);
          bmax = std::max(bmax, p);
          bmin = std::min(bmin, p);
        }
        const T plus = bmin - amax, minus = amin - bmax;
        const T sep = ok ? std::max(plus, minus) : -inf;
        if (first || sep > best_e) {
          first = false;
          best_e = sep;
          best = i * Db + j;
          best_plus = plus;
          best_minus = minus;
          best_u = u;
        }
      }
    const T sign = best_plus >= best_minus ? T(1) : T(-1);
    int64_t ia_v = 0, ib_v = 0;
    T am = -inf, bm = -inf;
    for (int64_t k = 0; k < Pa; ++k) {
      const T p = sign * dot(best_u, s.pa[k]);
      if (p > am) am = p, ia_v = k;
    }
    for (int64_t k = 0; k < Pb; ++k) {
      const T p = -sign * dot(best_u, s.pb[k]);
      if (p > bm) bm = p, ib_v = k;
    }
    ka = t.vca[t.via[ia_v] * Da + best / Db];
    kb = t.vcb[t.vib[ib_v] * Db + best % Db];
  } else {
    const int64_t Ea = t.ea.size() / 2, Eb = t.eb.size() / 2;
    V3<T> centre_a{0, 0, 0};
    for (int64_t k = 0; k < Pa; ++k) centre_a = add(centre_a, s.pa[k]);
    centre_a = mul(centre_a, T(1) / T(Pa));
    bool first = true;
    for (int64_t i = 0; i < Ea; ++i) {
      const V3<T> a1 = Rot(ra, s.na_body[t.efa[i * 2]]), a2 = Rot(ra, s.na_body[t.efa[i * 2 + 1]]);
      const V3<T> bxa = cross(a2, a1);
      const V3<T> ea0 = add(Rot(ra, va[t.ea[i * 2]]), xa);
      const V3<T> ua = Rot(ra, sub(va[t.ea[i * 2 + 1]], va[t.ea[i * 2]]));
      for (int64_t j = 0; j < Eb; ++j) {
        const V3<T> c1 = mul(Rot(rb, s.nb_body[t.efb[j * 2]]), T(-1));
        const V3<T> c2 = mul(Rot(rb, s.nb_body[t.efb[j * 2 + 1]]), T(-1));
        const V3<T> dxc = cross(c2, c1);
        const T cba = dot(bxa, c1), dba = dot(bxa, c2), adc = dot(a1, dxc), bdc = dot(a2, dxc);
        const bool minkowski = (cba * dba < 0) && (adc * bdc < 0) && (cba * bdc > 0);
        const V3<T> eb0 = add(Rot(rb, vb[t.eb[j * 2]]), xb);
        const V3<T> ub = Rot(rb, sub(vb[t.eb[j * 2 + 1]], vb[t.eb[j * 2]]));
        const V3<T> axis = cross(ua, ub);
        const T len2 = dot(axis, axis);
        const bool ok = minkowski && len2 > ps2 * dot(ua, ua) * dot(ub, ub);
        const T inv = T(1) / std::sqrt(ok ? len2 : T(1));
        const T sd = dot(axis, sub(ea0, centre_a));
        const T gap = dot(axis, sub(eb0, ea0));
        const T sep = ok ? (sd < 0 ? -gap : gap) * inv : -inf;
        if (first || sep > best_e) {
          first = false;
          best_e = sep;
          ka = i;
          kb = j;
        }
      }
    }
  }

  if (best_e > margin) return apart();

  // --- the choices (collision._hull_hull) ---
  int64_t ia = 0, ib = 0;
  for (int64_t f = 1; f < Fa; ++f)
    if (s.sep_a[f] > s.sep_a[ia]) ia = f;
  for (int64_t f = 1; f < Fb; ++f)
    if (s.sep_b[f] > s.sep_b[ib]) ib = f;
  const T best_a = s.sep_a[ia], best_b = s.sep_b[ib];
  const bool use_b = best_b > best_a + T(t.face_b_bias0) * std::abs(best_a) + T(t.face_b_bias1) * size;
  const T best_f = use_b ? best_b : best_a;
  const bool use_edge = best_e > best_f + T(t.edge_bias0) * std::abs(best_f) + T(t.edge_bias1) * size;
  const T separation = std::max(std::max(best_a, best_b), best_e);
  int64_t inc_a = 0, inc_b = 0;
  {
    T m = inf;
    for (int64_t f = 0; f < Fa; ++f) {
      const T d = dot(s.na[f], s.nb[ib]);
      if (d < m) m = d, inc_a = f;
    }
    m = inf;
    for (int64_t f = 0; f < Fb; ++f) {
      const T d = dot(s.nb[f], s.na[ia]);
      if (d < m) m = d, inc_b = f;
    }
  }

  // --- edge axis: one contact at the closest points of the two edges ---
  const T far = T(t.far);
  choice[0] = use_b, choice[1] = use_edge, choice[2] = static_cast<int32_t>(use_b ? ib : ia);
  choice[3] = static_cast<int32_t>(use_b ? inc_a : inc_b), choice[4] = static_cast<int32_t>(ka);
  choice[5] = static_cast<int32_t>(kb);
  if (use_edge) {
    const V3<T> e_p1 = s.wa[t.ea[ka * 2]], e_q1 = s.wa[t.ea[ka * 2 + 1]];
    const V3<T> e_p2 = s.wb[t.eb[kb * 2]], e_q2 = s.wb[t.eb[kb * 2 + 1]];
    const V3<T> d1 = sub(e_q1, e_p1), d2 = sub(e_q2, e_p2);
    V3<T> axis = cross(d1, d2);
    axis = mul(axis, T(1) / std::sqrt(std::max(dot(axis, axis), T(1e-30))));
    V3<T> centre_a{0, 0, 0};
    for (int64_t k = 0; k < Pa; ++k) centre_a = add(centre_a, s.wa[t.via[k]]);
    centre_a = mul(centre_a, T(1) / T(Pa));
    if (dot(axis, sub(e_p1, centre_a)) < 0) axis = mul(axis, T(-1));
    const T edge_phi = dot(axis, sub(e_p2, e_p1));
    const V3<T> rr = sub(e_p1, e_p2);
    const T aa = dot(d1, d1), ee = dot(d2, d2), bb = dot(d1, d2), cc = dot(d1, rr), ff = dot(d2, rr);
    T dn = aa * ee - bb * bb;
    dn = dn > T(1e-30) ? dn : T(1);
    const T s1 = std::min(std::max((bb * ff - cc * ee) / dn, T(0)), T(1));
    const T t2 = std::min(std::max((bb * s1 + ff) / (ee > 0 ? ee : T(1)), T(0)), T(1));
    const V3<T> edge_pt = mul(add(add(e_p1, mul(d1, s1)), add(e_p2, mul(d2, t2))), T(0.5));
    const bool edge_ok = edge_phi <= margin;
    normal[0] = axis.x, normal[1] = axis.y, normal[2] = axis.z;
    const bool v0 = edge_ok && separation <= margin;
    for (int64_t j = 0; j < num; ++j) {
      point[j * 3] = edge_pt.x, point[j * 3 + 1] = edge_pt.y, point[j * 3 + 2] = edge_pt.z;
      valid_out[j] = j == 0 && v0;
      phi_out[j] = j == 0 && v0 ? edge_phi : far;
      choice[6 + j] = 0;
    }
    *kind_out = v0 ? 1 : 0;
    return;
  }

  // --- face axis: clip the incident face against the reference face ---
  s.ref.resize(W);
  s.inc.resize(W);
  for (int64_t k = 0; k < W; ++k) {
    s.ref[k] = use_b ? s.wb[t.fb[ib * W + k]] : s.wa[t.fa[ia * W + k]];
    s.inc[k] = use_b ? s.wa[t.fa[inc_a * W + k]] : s.wb[t.fb[inc_b * W + k]];
  }
  const int64_t ref_size = use_b ? t.sb[ib] : t.sa[ia];
  const int64_t inc_size = use_b ? t.sa[inc_a] : t.sb[inc_b];
  const T tol = T(t.point_tol) * size;
  const T tol_d = T(0.1) * tol, tol_u = T(1e-6);
  const std::vector<V3<T>>& r = s.ref;
  const std::vector<V3<T>>& q = s.inc;
  const V3<T> n = PolyNormal(r, W), n_inc = PolyNormal(q, W);
  V3<T> c{0, 0, 0};
  for (int64_t k = 0; k < W; ++k)
    if (k < ref_size) c = add(c, r[k]);
  c = mul(c, T(1) / T(ref_size));
  s.e_ref.resize(W);
  s.e_inc.resize(W);
  s.side_ref.resize(W);
  s.side_inc.resize(W);
  s.len_ref.resize(W);
  s.len_inc.resize(W);
  s.off_ref.resize(W);
  s.off_inc.resize(W);
  for (int64_t k = 0; k < W; ++k) {
    s.e_ref[k] = sub(r[(k + 1) % W], r[k]);
    s.e_inc[k] = sub(q[(k + 1) % W], q[k]);
    s.side_ref[k] = cross(s.e_ref[k], n);
    s.side_inc[k] = cross(s.e_inc[k], n_inc);
    s.len_ref[k] = std::sqrt(dot(s.side_ref[k], s.side_ref[k]));
    s.len_inc[k] = std::sqrt(dot(s.side_inc[k], s.side_inc[k]));
    s.off_ref[k] = dot(s.side_ref[k], r[k]);
    s.off_inc[k] = dot(s.side_inc[k], q[k]);
  }
  auto inside_ref = [&](V3<T> x) {
    for (int64_t k = 0; k < ref_size; ++k)
      if (!(dot(x, s.side_ref[k]) - s.off_ref[k] <= tol_d * s.len_ref[k])) return false;
    return true;
  };
  auto inside_inc = [&](V3<T> x) {
    for (int64_t k = 0; k < inc_size; ++k)
      if (!(dot(x, s.side_inc[k]) - s.off_inc[k] <= tol_d * s.len_inc[k])) return false;
    return true;
  };
  const int64_t M = 2 * W + W * W;
  s.y.resize(M);
  s.mask.assign(M, 0);
  for (int64_t k = 0; k < W; ++k) {  // 1. incident vertices inside the reference prism
    s.y[k] = q[k];
    s.mask[k] = k < inc_size && inside_ref(q[k]);
  }
  const T den = dot(n_inc, n);
  const bool den_ok = den < T(-0.05);
  for (int64_t j = 0; j < W; ++j) {  // 2. reference vertices inside the incident polygon
    const T tt = (dot(n_inc, q[0]) - dot(n_inc, r[j])) / (den_ok ? den : T(-1));
    s.y[W + j] = add(r[j], mul(n, tt));
    s.mask[W + j] = j < ref_size && den_ok && inside_inc(s.y[W + j]);
  }
  for (int64_t k = 0; k < W; ++k) {  // 3. incident edge k across reference edge i's side plane
    const T le = std::sqrt(dot(s.e_inc[k], s.e_inc[k]));
    for (int64_t i = 0; i < W; ++i) {
      const T numr = s.off_ref[i] - dot(q[k], s.side_ref[i]);
      const T dd = dot(s.e_inc[k], s.side_ref[i]);
      const bool dd_ok = std::abs(dd) > T(1e-12) * s.len_ref[i] * le + T(1e-30);
      const T u = numr / (dd_ok ? dd : T(1));
      const V3<T> y3 = add(q[k], mul(s.e_inc[k], u));
      const bool rok = i < ref_size;
      const T lr2 = dot(s.e_ref[i], s.e_ref[i]);
      const T w = dot(sub(y3, r[i]), s.e_ref[i]) / (rok ? lr2 : T(1));
      s.y[2 * W + k * W + i] = y3;
      s.mask[2 * W + k * W + i] = k < inc_size && rok && dd_ok && u >= -tol_u && u <= 1 + tol_u &&
                                  w >= -tol_u && w <= 1 + tol_u;
    }
  }
  s.phi.resize(M);
  for (int64_t m = 0; m < M; ++m) {
    s.phi[m] = dot(sub(s.y[m], c), n);
    s.mask[m] = s.mask[m] && s.phi[m] <= margin;
  }

  // --- the reduction (collision._reduce) ---
  std::vector<T>& x = s.work;
  x.resize(M);
  std::vector<int64_t>& idx = s.idx;
  std::vector<char>& oks = s.oks;
  for (int64_t m = 0; m < M; ++m) x[m] = s.mask[m] ? -s.phi[m] : -inf;
  const int64_t i1 = ArgMax(x, M);
  const V3<T> p1 = s.y[i1];
  for (int64_t m = 0; m < M; ++m) x[m] = s.mask[m] ? dot(sub(s.y[m], p1), sub(s.y[m], p1)) : T(-1);
  const int64_t i2 = ArgMax(x, M);
  const bool ok1 = s.mask[i1];
  const bool ok2 = ok1 && x[i2] > tol * tol;
  const V3<T> p2 = s.y[i2];
  V3<T> perp = cross(n, sub(p2, p1));
  perp = mul(perp, T(1) / std::max(std::sqrt(dot(perp, perp)), T(1e-30)));
  for (int64_t m = 0; m < M; ++m) x[m] = s.mask[m] ? std::abs(dot(sub(s.y[m], p1), perp)) : T(-1);
  const int64_t i3 = ArgMax(x, M);
  const bool ok3 = ok2 && x[i3] > tol;
  const int32_t kind_f = ok3 ? 3 : (ok2 ? 2 : (ok1 ? 1 : 0));
  idx = {i1, i2, i3};
  oks = {ok1, ok2, ok3};
  if (num >= 4) {
    const V3<T> p3 = s.y[i3];
    const V3<T> tri[3][3] = {{p1, p2, p3}, {p2, p3, p1}, {p3, p1, p2}};
    for (int64_t m = 0; m < M; ++m) x[m] = -inf;
    for (auto& e : tri) {
      V3<T> qv = cross(n, sub(e[1], e[0]));
      if (dot(qv, sub(e[2], e[0])) > 0) qv = mul(qv, T(-1));
      for (int64_t m = 0; m < M; ++m) x[m] = std::max(x[m], dot(sub(s.y[m], e[0]), qv));
    }
    for (int64_t m = 0; m < M; ++m)
      if (!s.mask[m]) x[m] = -inf;
    const int64_t i4 = ArgMax(x, M);
    const T scale = std::max(std::sqrt(dot(sub(p2, p1), sub(p2, p1))), T(1e-30));
    idx.push_back(i4);
    oks.push_back(ok3 && x[i4] > tol * scale);
  }
  if (num > static_cast<int64_t>(idx.size())) {
    std::vector<T>& mind = s.mind;
    mind.assign(M, inf);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j : idx) mind[m] = std::min(mind[m], dot(sub(s.y[m], s.y[j]), sub(s.y[m], s.y[j])));
    while (static_cast<int64_t>(idx.size()) < num) {  // farthest-point sampling
      for (int64_t m = 0; m < M; ++m) x[m] = s.mask[m] ? mind[m] : T(-1);
      const int64_t i = ArgMax(x, M);
      const bool ok = oks.back() && mind[i] > tol * tol;
      idx.push_back(i);
      oks.push_back(ok);
      for (int64_t m = 0; m < M; ++m) mind[m] = std::min(mind[m], dot(sub(s.y[m], s.y[i]), sub(s.y[m], s.y[i])));
    }
  }

  // --- the face's contacts ---
  bool any = false;
  const V3<T> fn = use_b ? mul(n, T(-1)) : n;
  normal[0] = fn.x, normal[1] = fn.y, normal[2] = fn.z;
  for (int64_t j = 0; j < num; ++j) {
    const bool v = oks[j] && separation <= margin;
    any = any || v;
    const T ph = s.phi[idx[j]];
    const V3<T> pt = sub(s.y[idx[j]], mul(n, T(0.5) * ph));
    phi_out[j] = v ? ph : far;
    valid_out[j] = v;
    point[j * 3] = pt.x, point[j * 3 + 1] = pt.y, point[j * 3 + 2] = pt.z;
    choice[6 + j] = static_cast<int32_t>(idx[j]);
  }
  *kind_out = any ? kind_f : 0;
}

template <ffi::DataType DT>
ffi::Error Narrow(ffi::Buffer<DT> va, ffi::Buffer<DT> pos_a, ffi::Buffer<DT> quat_a, ffi::Buffer<DT> vb,
                  ffi::Buffer<DT> pos_b, ffi::Buffer<DT> quat_b, ffi::Buffer<DT> margin, I32s fa, I32s fb, I32s sa,
                  I32s sb, I32s ea, I32s eb, I32s efa, I32s efb, I32s via, I32s vib, I32s ca, I32s cb, I32s vca,
                  I32s vcb, int64_t width, int64_t support, int64_t num, int64_t threads, double face_b_bias0,
                  double face_b_bias1, double edge_bias0, double edge_bias1, double parallel_sine,
                  double point_tol, double far, ffi::ResultBuffer<DT> point, ffi::ResultBuffer<DT> normal,
                  ffi::ResultBuffer<DT> phi, ffi::ResultBuffer<ffi::S32> valid, ffi::ResultBuffer<ffi::S32> kind,
                  ffi::ResultBuffer<ffi::S32> choice) {
  using T = ffi::NativeType<DT>;
  const Topo t{fa, fb, sa, sb, ea, eb, efa, efb, via, vib, ca, cb, vca, vcb, width, support, num,
               face_b_bias0, face_b_bias1, edge_bias0, edge_bias1, parallel_sine, point_tol, far};
  auto ad = va.dimensions(), bd = vb.dimensions();
  if (ad.size() < 2 || bd.size() < 2 || ad.back() != 3 || bd.back() != 3)
    return ffi::Error::InvalidArgument("jaxcontact narrow: va and vb must be (..., K, 3)");
  const int64_t Ka = ad[ad.size() - 2], Kb = bd[bd.size() - 2];
  const int64_t B = static_cast<int64_t>(margin.element_count());
  if (static_cast<int64_t>(va.element_count()) != B * Ka * 3 || static_cast<int64_t>(vb.element_count()) != B * Kb * 3 ||
      static_cast<int64_t>(pos_a.element_count()) != B * 3 || static_cast<int64_t>(quat_b.element_count()) != B * 4)
    return ffi::Error::InvalidArgument("jaxcontact narrow: inconsistent batch dimensions");
  if (static_cast<int64_t>(via.size()) == 0 || static_cast<int64_t>(vib.size()) == 0 || num < 1)
    return ffi::Error::InvalidArgument("jaxcontact narrow: empty hull or num < 1");
  auto work = [&](int64_t lo, int64_t hi) {
    Scratch<T> s;
    for (int64_t b = lo; b < hi; ++b)
      Pair<T>(t, va.typed_data() + b * Ka * 3, pos_a.typed_data() + b * 3, quat_a.typed_data() + b * 4,
              vb.typed_data() + b * Kb * 3, pos_b.typed_data() + b * 3, quat_b.typed_data() + b * 4,
              margin.typed_data()[b], Ka, Kb, s, point->typed_data() + b * num * 3, normal->typed_data() + b * 3,
              phi->typed_data() + b * num, valid->typed_data() + b * num, kind->typed_data() + b,
              choice->typed_data() + b * (6 + num));
  };
  jaxcontact::ForBatch(B, threads, 64, work);  // a thread is worth it from about 64 pairs
  return ffi::Error::Success();
}

}  // namespace

#define JAXCONTACT_NARROW(NAME, DT)                                                                       \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                                                                          \
      NAME, Narrow<DT>,                                                                                   \
      ffi::Ffi::Bind()                                                                                    \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Attr<I32s>("fa").Attr<I32s>("fb").Attr<I32s>("sa").Attr<I32s>("sb")                          \
          .Attr<I32s>("ea").Attr<I32s>("eb").Attr<I32s>("efa").Attr<I32s>("efb")                         \
          .Attr<I32s>("via").Attr<I32s>("vib").Attr<I32s>("ca").Attr<I32s>("cb")                         \
          .Attr<I32s>("vca").Attr<I32s>("vcb")                                                           \
          .Attr<int64_t>("width").Attr<int64_t>("support").Attr<int64_t>("num").Attr<int64_t>("threads")  \
          .Attr<double>("face_b_bias0").Attr<double>("face_b_bias1").Attr<double>("edge_bias0")           \
          .Attr<double>("edge_bias1").Attr<double>("parallel_sine").Attr<double>("point_tol")             \
          .Attr<double>("far")                                                                            \
          .Ret<ffi::Buffer<DT>>()                                                                         \
          .Ret<ffi::Buffer<DT>>()                                                                         \
          .Ret<ffi::Buffer<DT>>()                                                                         \
          .Ret<ffi::Buffer<ffi::S32>>()                                                                   \
          .Ret<ffi::Buffer<ffi::S32>>()                                                                   \
          .Ret<ffi::Buffer<ffi::S32>>());

JAXCONTACT_NARROW(JaxcontactNarrowF32, ffi::F32)
JAXCONTACT_NARROW(JaxcontactNarrowF64, ffi::F64)
