// The general convex method's axis search (collision._best_axis), one fused CPU kernel (an XLA FFI
// custom call).
//
// For a pair of convex shapes (a hull, a sphere, a capsule, a cylinder or an ellipsoid) the axis n
// (a → b) of largest separation sep(n) = n·(s_b(−n) − s_a(n)) (s: support points): the candidate
// axes (a Fibonacci lattice, the centres' direction, each shape's own axes, the crosses of their
// lines, both signs), then CONVEX_STARTS pattern searches on the sphere from the best of them (a
// ring of axes turned by the golden angle each step, the support-point steps, both projected onto
// each shape's lines), the best end kept. collision.py's _best_axis written once as a loop: the
// same candidates, steps and choices, to round-off. The axis is a choice without gradient
// (collision.convex_pair recomputes φ, the points and the manifold from it in JAX, with their
// derivatives), so this kernel has no derivative of its own. Every leading dimension is a batch of
// pairs (vmap_method="broadcast_all"), split over threads.
//
// Arguments (per pair, for a then b): verts (K, 3) body frame, radius (), dims (3), pos (3), quat
// (4, w x y z); then the pair's margin (). A pair that an axis separates by more than the margin
// has no contact whichever axis the search would end at (φ is the largest separation), so the
// kernel returns that axis at once: the direction of the centres, checked first, else the best
// candidate, else the first step of the pattern search that reaches one (the reference searches on;
// its contacts are none too). The margin is taken with a
// relative slack (MARGIN_SLACK) so that JAX's recomputation of φ at the axis, a round-off apart,
// also finds it beyond the margin. Attributes (static): kind_a, kind_b (0 hull, 1 sphere, 2 capsule, 3 cylinder,
// 4 ellipsoid); for a hull its vertex indices (via, vib), its faces' vertex rings padded to a
// width (rings_a, width_a; collision._hull_faces) and its edge classes' end vertices (lines_a, two
// a class); the search's constants (lattice, iterations, ring, shrink, starts). Result: n (3).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "parallel.h"
#include "vec3.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using I32s = ffi::Span<const int32_t>;
using namespace jaxcontact;

enum Kind : int64_t { kHull = 0, kSphere = 1, kCapsule = 2, kCylinder = 3, kEllipsoid = 4 };

// One shape of the pair in the world (its support function, own axes, lines and size).
template <typename T>
struct Shape {
  int64_t kind;
  T R[9];  // body → world, row-major (rotations.quat_to_mat)
  V3<T> pos;
  T radius;
  T dims[3];
  std::vector<V3<T>> local;  // a hull's vertices (body frame), a sphere's or capsule's core
  std::vector<V3<T>> w;      // the same in the world

  V3<T> rot(V3<T> v) const {
    return {R[0] * v.x + R[1] * v.y + R[2] * v.z, R[3] * v.x + R[4] * v.y + R[5] * v.z,
            R[6] * v.x + R[7] * v.y + R[8] * v.z};
  }
  V3<T> rot_t(V3<T> v) const {
    return {R[0] * v.x + R[3] * v.y + R[6] * v.z, R[1] * v.x + R[4] * v.y + R[7] * v.z,
            R[2] * v.x + R[5] * v.y + R[8] * v.z};
  }
  V3<T> zaxis() const { return {R[2], R[5], R[8]}; }

  void set(int64_t k, const T* verts, int64_t K, T r, const T* d, const T* p, const T* q, I32s vi) {
    kind = k;
    QuatToMat(q, R);
    pos = {p[0], p[1], p[2]};
    radius = r;
    dims[0] = d[0], dims[1] = d[1], dims[2] = d[2];
    local.clear();
    if (kind == kHull) {
      for (int32_t i : vi) local.push_back({verts[3 * i], verts[3 * i + 1], verts[3 * i + 2]});
    } else if (kind == kSphere || kind == kCapsule) {
      for (int64_t i = 0; i < (kind == kCapsule ? 2 : 1) && i < K; ++i)
        local.push_back({verts[3 * i], verts[3 * i + 1], verts[3 * i + 2]});
    }
    w.resize(local.size());
    for (size_t i = 0; i < local.size(); ++i) w[i] = add(pos, rot(local[i]));
  }

  V3<T> support(V3<T> n) const {
    if (kind == kHull || kind == kSphere || kind == kCapsule) {
      size_t best = 0;
      T hb = dot(w[0], n);
      for (size_t i = 1; i < w.size(); ++i) {
        const T h = dot(w[i], n);
        if (h > hb) hb = h, best = i;
      }
      return kind == kHull ? w[best] : add(w[best], mul(n, radius));
    }
    const V3<T> nl = rot_t(n);
    V3<T> s;
    if (kind == kCylinder) {
      const T r = std::sqrt(std::max(nl.x * nl.x + nl.y * nl.y, T(1e-30)));
      const T sz = nl.z > 0 ? T(1) : (nl.z < 0 ? T(-1) : T(0));
      s = {dims[0] * (nl.x / r), dims[0] * (nl.y / r), dims[1] * sz};
    } else {
      const V3<T> an = {dims[0] * nl.x, dims[1] * nl.y, dims[2] * nl.z};
      const T r = std::sqrt(std::max(dot(an, an), std::numeric_limits<T>::min()));
      s = {dims[0] * an.x / r, dims[1] * an.y / r, dims[2] * an.z / r};
    }
    return add(pos, rot(s));
  }

  T size() const {
    if (kind == kCylinder) return std::sqrt(dims[0] * dims[0] + dims[1] * dims[1]);
    if (kind == kEllipsoid) return std::max(dims[0], std::max(dims[1], dims[2]));
    T m = T(0);
    for (const auto& v : local) m = std::max(m, std::sqrt(dot(v, v)));
    return kind == kHull ? m : m + radius;
  }

  void axes(V3<T> other, I32s rings, int64_t width, const T* verts, std::vector<V3<T>>& out) const {
    if (kind == kHull) {
      const int64_t F = static_cast<int64_t>(rings.size()) / width;
      for (int64_t f = 0; f < F; ++f) {
        V3<T> a = {0, 0, 0};
        for (int64_t m = 0; m < width; ++m) {
          const int32_t i = rings[f * width + m], j = rings[f * width + (m + 1) % width];
          const V3<T> p = rot({verts[3 * i], verts[3 * i + 1], verts[3 * i + 2]});
          const V3<T> q = rot({verts[3 * j], verts[3 * j + 1], verts[3 * j + 2]});
          a = add(a, cross(p, q));
        }
        out.push_back(unit(a));
      }
    } else if (kind == kCylinder) {
      const V3<T> z = zaxis();
      const V3<T> d = sub(other, pos);
      out.push_back(z);
      out.push_back(unit(sub(d, mul(z, dot(d, z)))));
    } else if (kind == kCapsule) {
      out.push_back(unit(sub(w[1], w[0])));
    }
  }

  void lines(I32s edges, const T* verts, std::vector<V3<T>>& out) const {
    if (kind == kHull) {
      for (size_t e = 0; e + 1 < edges.size(); e += 2) {
        const int32_t i = edges[e], j = edges[e + 1];
        const V3<T> d = {verts[3 * j] - verts[3 * i], verts[3 * j + 1] - verts[3 * i + 1],
                         verts[3 * j + 2] - verts[3 * i + 2]};
        out.push_back(unit(rot(d)));
      }
    } else if (kind == kCylinder) {
      out.push_back(zaxis());
    } else if (kind == kCapsule) {
      out.push_back(unit(sub(w[1], w[0])));
    }
  }
};

constexpr double kMarginSlack = 1e-3;  // MARGIN_SLACK (relative to the margin and the shapes' sizes)

struct Search {
  int64_t lattice, iterations, ring, starts;
  double shrink;
};

template <typename T>
inline T Separation(const Shape<T>& a, const Shape<T>& b, V3<T> n) {
  return dot(n, sub(b.support(mul(n, T(-1))), a.support(n)));
}

template <typename T>
inline void Tangents(V3<T> n, V3<T>& t1, V3<T>& t2) {  // geometry.tangent_basis
  const V3<T> a = std::abs(n.x) < T(0.9) ? V3<T>{1, 0, 0} : V3<T>{0, 1, 0};
  t1 = sub(a, mul(n, dot(a, n)));
  const T r = std::sqrt(dot(t1, t1));
  t1 = {t1.x / r, t1.y / r, t1.z / r};
  t2 = cross(n, t1);
}

template <typename T>
V3<T> BestAxis(const Shape<T>& a, const Shape<T>& b, const std::vector<V3<T>>& own,
               const std::vector<V3<T>>& la, const std::vector<V3<T>>& lb, const Search& s, T beyond,
               std::vector<V3<T>>& cand, std::vector<T>& vals, std::vector<V3<T>>& dirs) {
  const V3<T> centres = unit(sub(b.pos, a.pos));
  if (Separation(a, b, centres) > beyond) return centres;  // apart beyond the margin: no contact
  std::vector<V3<T>> lines(la);
  lines.insert(lines.end(), lb.begin(), lb.end());
  const T kappa = T(4) * (a.size() + b.size());
  cand.clear();
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < s.lattice; ++i) {  // collision._fibonacci, in double as numpy
    const double k = i + 0.5, z = 1 - 2 * k / s.lattice, phi = pi * (1 + std::sqrt(5.0)) * k;
    const double r = std::sqrt(1 - z * z);
    cand.push_back({T(r * std::cos(phi)), T(r * std::sin(phi)), T(z)});
  }
  cand.push_back(unit(sub(b.pos, a.pos)));
  for (const auto& o : own) cand.push_back(o);
  for (const auto& o : own) cand.push_back(mul(o, T(-1)));
  const size_t first_cross = cand.size();
  for (const auto& x : la)
    for (const auto& y : lb) {
      const V3<T> c = cross(x, y);
      cand.push_back(dot(c, c) > T(1e-12) ? unit(c) : V3<T>{1, 0, 0});
    }
  const size_t ncross = cand.size() - first_cross;
  for (size_t i = 0; i < ncross; ++i) cand.push_back(mul(cand[first_cross + i], T(-1)));
  vals.resize(cand.size());
  for (size_t i = 0; i < cand.size(); ++i) vals[i] = Separation(a, b, cand[i]);
  // top_k: the largest first, ties in index order
  std::vector<int64_t> order(cand.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  const int64_t S = std::min<int64_t>(s.starts, static_cast<int64_t>(cand.size()));
  std::partial_sort(order.begin(), order.begin() + S, order.end(), [&](int64_t i, int64_t j) {
    return vals[i] > vals[j] || (vals[i] == vals[j] && i < j);
  });
  if (vals[order[0]] > beyond) return cand[order[0]];  // a candidate separates beyond the margin
  const T delta0 = T(std::sqrt(4 * pi / static_cast<double>(s.lattice)));
  const T golden = T(pi * (3 - std::sqrt(5.0)));
  std::vector<T> ring(s.ring);
  for (int64_t i = 0; i < s.ring; ++i) ring[i] = T(2 * pi * static_cast<double>(i) / static_cast<double>(s.ring));
  V3<T> best_n = cand[order[0]];
  T best_f = -std::numeric_limits<T>::infinity();
  for (int64_t st = 0; st < S; ++st) {
    V3<T> n = cand[order[st]];
    T f = vals[order[st]], delta = delta0;
    for (int64_t it = 0; it < s.iterations; ++it) {
      V3<T> t1, t2;
      Tangents(n, t1, t2);
      const T kk = static_cast<T>(it);
      const T cd = std::cos(delta), sd = std::sin(delta);
      dirs.clear();
      for (int64_t r = 0; r < s.ring; ++r) {
        const T ang = ring[r] + kk * golden;
        dirs.push_back(add(mul(n, cd), mul(add(mul(t1, std::cos(ang)), mul(t2, std::sin(ang))), sd)));
      }
      const V3<T> z = sub(b.support(mul(n, T(-1))), a.support(n));
      const V3<T> fp[2] = {unit(add(z, mul(n, kappa - f))), unit(add(z, mul(n, T(0.25) * kappa - f)))};
      dirs.push_back(fp[0]);
      dirs.push_back(fp[1]);
      const V3<T> both[3] = {n, fp[0], fp[1]};
      for (const auto& x : both)
        for (const auto& l : lines) {
          const V3<T> p = sub(x, mul(l, dot(x, l)));
          dirs.push_back(dot(p, p) > T(1e-12) ? p : n);
        }
      int64_t j = 0;
      T vj = -std::numeric_limits<T>::infinity();
      V3<T> nj = n;
      for (size_t i = 0; i < dirs.size(); ++i) {
        const V3<T> d = unit(dirs[i]);
        const T v = Separation(a, b, d);
        if (v > vj || i == 0) vj = v, j = static_cast<int64_t>(i), nj = d;
      }
      (void)j;
      if (vj > f) {
        n = nj, f = vj;
        if (f > beyond) return n;  // the search reached an axis that separates beyond the margin
      } else {
        delta = static_cast<T>(s.shrink) * delta;
      }
    }
    if (st == 0 || f > best_f) best_f = f, best_n = n;
  }
  return best_n;
}

// The argument checks both handlers share (Convex, ConvexPair): batch shapes, kinds, hull tables, search
// constants; ``who`` names the kernel in the message. Success() when every check holds.
template <ffi::DataType DT>
ffi::Error CheckInputs(const std::string& who, ffi::Buffer<DT>& va, ffi::Buffer<DT>& ra, ffi::Buffer<DT>& da,
                       ffi::Buffer<DT>& pos_a, ffi::Buffer<DT>& quat_a, ffi::Buffer<DT>& vb, ffi::Buffer<DT>& rb,
                       ffi::Buffer<DT>& db, ffi::Buffer<DT>& pos_b, ffi::Buffer<DT>& quat_b, ffi::Buffer<DT>& margin,
                       int64_t kind_a, int64_t kind_b, I32s& via, I32s& vib, int64_t width_a, int64_t width_b,
                       int64_t lattice, int64_t iterations, int64_t ring, int64_t starts) {
  auto ad = va.dimensions(), bd = vb.dimensions();
  if (ad.size() < 2 || bd.size() < 2 || ad.back() != 3 || bd.back() != 3)
    return ffi::Error::InvalidArgument(who + ": verts must be (..., K, 3)");
  const int64_t Ka = ad[ad.size() - 2], Kb = bd[bd.size() - 2];
  const int64_t B = static_cast<int64_t>(ra.element_count());
  if (static_cast<int64_t>(va.element_count()) != B * Ka * 3 || static_cast<int64_t>(vb.element_count()) != B * Kb * 3 ||
      static_cast<int64_t>(pos_a.element_count()) != B * 3 || static_cast<int64_t>(pos_b.element_count()) != B * 3 ||
      static_cast<int64_t>(quat_a.element_count()) != B * 4 || static_cast<int64_t>(quat_b.element_count()) != B * 4 ||
      static_cast<int64_t>(da.element_count()) != B * 3 || static_cast<int64_t>(db.element_count()) != B * 3 ||
      static_cast<int64_t>(rb.element_count()) != B || static_cast<int64_t>(margin.element_count()) != B)
    return ffi::Error::InvalidArgument(who + ": inconsistent batch dimensions");
  for (int64_t k : {kind_a, kind_b})
    if (k < kHull || k > kEllipsoid) return ffi::Error::InvalidArgument(who + ": unknown kind");
  if ((kind_a == kHull && (via.size() == 0 || width_a < 1)) || (kind_b == kHull && (vib.size() == 0 || width_b < 1)))
    return ffi::Error::InvalidArgument(who + ": a hull without vertices or faces");
  if ((kind_a == kCapsule && Ka < 2) || (kind_b == kCapsule && Kb < 2) || (kind_a == kSphere && Ka < 1) ||
      (kind_b == kSphere && Kb < 1))
    return ffi::Error::InvalidArgument(who + ": a sphere needs one core vertex, a capsule two");
  if (lattice < 1 || starts < 1 || ring < 1 || iterations < 0)
    return ffi::Error::InvalidArgument(who + ": bad search constants");
  return ffi::Error::Success();
}


template <ffi::DataType DT>
ffi::Error Convex(ffi::Buffer<DT> va, ffi::Buffer<DT> ra, ffi::Buffer<DT> da, ffi::Buffer<DT> pos_a,
                  ffi::Buffer<DT> quat_a, ffi::Buffer<DT> vb, ffi::Buffer<DT> rb, ffi::Buffer<DT> db,
                  ffi::Buffer<DT> pos_b, ffi::Buffer<DT> quat_b, ffi::Buffer<DT> margin, int64_t kind_a, int64_t kind_b, I32s via, I32s vib,
                  I32s rings_a, I32s rings_b, int64_t width_a, int64_t width_b, I32s lines_a, I32s lines_b,
                  int64_t lattice, int64_t iterations, int64_t ring, int64_t starts, double shrink,
                  int64_t threads, ffi::ResultBuffer<DT> normal) {
  using T = ffi::NativeType<DT>;
  if (ffi::Error bad = CheckInputs<DT>("jaxcontact convex", va, ra, da, pos_a, quat_a, vb, rb, db, pos_b, quat_b, margin,
                                       kind_a, kind_b, via, vib, width_a, width_b, lattice, iterations, ring, starts);
      bad.failure())
    return bad;
  const int64_t Ka = va.dimensions()[va.dimensions().size() - 2], Kb = vb.dimensions()[vb.dimensions().size() - 2];
  const int64_t B = static_cast<int64_t>(ra.element_count());
  const Search search{lattice, iterations, ring, starts, shrink};
  auto work = [&](int64_t lo, int64_t hi) {
    Shape<T> a, b;
    std::vector<V3<T>> own, la, lb, cand, dirs;
    std::vector<T> vals;
    for (int64_t i = lo; i < hi; ++i) {
      const T* xa = va.typed_data() + i * Ka * 3;
      const T* xb = vb.typed_data() + i * Kb * 3;
      a.set(kind_a, xa, Ka, ra.typed_data()[i], da.typed_data() + i * 3, pos_a.typed_data() + i * 3,
            quat_a.typed_data() + i * 4, via);
      b.set(kind_b, xb, Kb, rb.typed_data()[i], db.typed_data() + i * 3, pos_b.typed_data() + i * 3,
            quat_b.typed_data() + i * 4, vib);
      own.clear(), la.clear(), lb.clear();
      a.axes(b.pos, rings_a, width_a, xa, own);
      b.axes(a.pos, rings_b, width_b, xb, own);
      a.lines(lines_a, xa, la);
      b.lines(lines_b, xb, lb);
      const T m = margin.typed_data()[i];
      const T beyond = m + static_cast<T>(kMarginSlack) * (std::abs(m) + a.size() + b.size());
      const V3<T> n = BestAxis(a, b, own, la, lb, search, beyond, cand, vals, dirs);
      T* out = normal->typed_data() + i * 3;
      out[0] = n.x, out[1] = n.y, out[2] = n.z;
    }
  };
  jaxcontact::ForBatch(B, threads, 8, work);  // a search is ~5,000 support evaluations: a thread from 8 pairs
  return ffi::Error::Success();
}

// --- the manifold at the axis (collision.convex_pair after _axis; _convex_candidates, _reduce) ---

template <typename T>
inline std::pair<T, bool> BallEntry(V3<T> p, V3<T> d, T r) {  // collision._ball_entry
  const T b = dot(p, d);
  const T disc = b * b - (dot(p, p) - r * r);
  const bool hit = disc >= 0;
  return {-b - std::sqrt(hit ? disc : T(0)), hit};
}

template <typename T>
inline std::pair<T, bool> CylinderEntry(V3<T> p, V3<T> d, T rho, T half) {  // collision._cylinder_entry
  const T big = T(1e9);
  const T a = d.x * d.x + d.y * d.y, b = p.x * d.x + p.y * d.y, c = p.x * p.x + p.y * p.y - rho * rho;
  const bool along = a <= T(1e-12);
  const T sa = along ? T(1) : a;
  const T disc = b * b - sa * c;
  const bool side_hit = along ? c <= 0 : disc >= 0;
  const T root = std::sqrt(side_hit && !along ? disc : T(0));
  const T lo_s = along ? -big : (-b - root) / sa, hi_s = along ? big : (-b + root) / sa;
  const bool flat = std::abs(d.z) <= T(1e-12);
  const T sd = flat ? T(1) : d.z;
  const T t1 = (-half - p.z) / sd, t2 = (half - p.z) / sd;
  const T lo_z = flat ? -big : std::min(t1, t2), hi_z = flat ? big : std::max(t1, t2);
  const bool cap_hit = flat ? std::abs(p.z) <= half : true;
  const T lo = std::max(lo_s, lo_z), hi = std::min(hi_s, hi_z);
  return {lo, side_hit && cap_hit && lo <= hi};
}

// The cylinder's rim angles (geometry.RIM_ANGLES) and its 8 fixed points a rim (_Convex.extremes), once.
struct Trig {
  double rim_cos[3], rim_sin[3], ring_cos[8], ring_sin[8];
  Trig() {
    const double pi = 3.14159265358979323846;
    const double rim[3] = {0.0, 2 * pi / 3, -2 * pi / 3};
    for (int k = 0; k < 3; ++k) rim_cos[k] = std::cos(rim[k]), rim_sin[k] = std::sin(rim[k]);
    for (int k = 0; k < 8; ++k) ring_cos[k] = std::cos(2 * pi * k / 8), ring_sin[k] = std::sin(2 * pi * k / 8);
  }
};

// A shape's manifold side: its hull faces in the world (entry), extremes, support segment.
template <typename T>
struct Side {
  const Shape<T>* s;
  std::vector<V3<T>> fn;  // a hull's outward face normals (world)
  std::vector<T> fd;      // and offsets n·(the face's mean vertex)

  void faces(I32s rings, int64_t width, const T* verts) {
    fn.clear(), fd.clear();
    if (s->kind != kHull) return;
    const int64_t F = static_cast<int64_t>(rings.size()) / width;
    for (int64_t f = 0; f < F; ++f) {
      V3<T> a = {0, 0, 0}, mean = {0, 0, 0};
      for (int64_t m = 0; m < width; ++m) {
        const int32_t i = rings[f * width + m], j = rings[f * width + (m + 1) % width];
        const V3<T> p = add(s->pos, s->rot({verts[3 * i], verts[3 * i + 1], verts[3 * i + 2]}));
        const V3<T> q = add(s->pos, s->rot({verts[3 * j], verts[3 * j + 1], verts[3 * j + 2]}));
        a = add(a, cross(p, q));
        mean = add(mean, p);
      }
      const V3<T> nf = unit(a);
      fn.push_back(nf);
      fd.push_back(dot(nf, mul(mean, T(1) / static_cast<T>(width))));
    }
  }

  // (t, hit): where the line p + t d (unit d) enters the shape (_Convex.entry)
  std::pair<T, bool> entry(V3<T> p, V3<T> d) const {
    const T big = T(1e9);
    const int64_t kind = s->kind;
    if (kind == kHull) {
      T lo = -std::numeric_limits<T>::infinity(), hi = std::numeric_limits<T>::infinity();
      for (size_t f = 0; f < fn.size(); ++f) {
        const T off = fd[f] - dot(fn[f], p), den = dot(fn[f], d);
        const bool par = std::abs(den) <= T(1e-12);
        const T t = off / (par ? T(1) : den);
        lo = std::max(lo, den < T(-1e-12) ? t : (par && off < 0 ? big : -big));
        hi = std::min(hi, den > T(1e-12) ? t : (par && off < 0 ? -big : big));
      }
      return {lo, lo <= hi};
    }
    if (kind == kSphere) return BallEntry(sub(p, s->w[0]), d, s->radius);
    if (kind == kCapsule) {
      const auto e0 = BallEntry(sub(p, s->w[0]), d, s->radius), e1 = BallEntry(sub(p, s->w[1]), d, s->radius);
      const V3<T> ax = sub(s->w[1], s->w[0]);
      const T half = T(0.5) * std::sqrt(dot(ax, ax));
      const V3<T> z = unit(ax);
      V3<T> t1, t2;
      Tangents(z, t1, t2);
      const V3<T> rel = sub(p, mul(add(s->w[0], s->w[1]), T(0.5)));
      const auto ec = CylinderEntry<T>({dot(t1, rel), dot(t2, rel), dot(z, rel)}, {dot(t1, d), dot(t2, d), dot(z, d)},
                                       s->radius, half);
      const T t = std::min(std::min(e0.second ? e0.first : big, e1.second ? e1.first : big), ec.second ? ec.first : big);
      return {t, e0.second || e1.second || ec.second};
    }
    const V3<T> pl = s->rot_t(sub(p, s->pos)), dl = s->rot_t(d);
    if (kind == kCylinder) return CylinderEntry(pl, dl, s->dims[0], s->dims[1]);
    const V3<T> ps = {pl.x / s->dims[0], pl.y / s->dims[1], pl.z / s->dims[2]};
    const V3<T> ds = {dl.x / s->dims[0], dl.y / s->dims[1], dl.z / s->dims[2]};
    const T aa = dot(ds, ds), b = dot(ps, ds) / aa;
    const T disc = b * b - (dot(ps, ps) - T(1)) / aa;
    const bool hit = disc >= 0;
    return {-b - std::sqrt(hit ? disc : T(0)), hit};
  }

  // the points that may touch a body lying along +n (_Convex.extremes)
  void extremes(V3<T> n, std::vector<V3<T>>& out) const {
    out.clear();
    const int64_t kind = s->kind;
    if (kind == kHull) {
      out = s->w;
    } else if (kind == kCylinder) {  // geometry.cylinder_rim, then 8 fixed points of each rim
      const V3<T> nb = s->rot_t(n);
      T ux = nb.x, uy = nb.y;
      const T norm = std::sqrt(ux * ux + uy * uy);
      if (norm > 0) ux = ux / norm, uy = uy / norm;
      else ux = T(1), uy = T(0);
      const T vx = -uy, vy = ux;
      static const Trig trig;
      for (T sign : {T(-1), T(1)})
        for (int k = 0; k < 3; ++k) {
          const T c = T(trig.rim_cos[k]), sn = T(trig.rim_sin[k]);
          const T dx = c * ux + sn * vx, dy = c * uy + sn * vy;
          out.push_back(add(s->pos, s->rot({s->dims[0] * dx, s->dims[0] * dy, sign * s->dims[1]})));
        }
      for (T sign : {T(-1), T(1)})
        for (int k = 0; k < 8; ++k)
          out.push_back(add(s->pos, s->rot({s->dims[0] * T(trig.ring_cos[k]), s->dims[0] * T(trig.ring_sin[k]),
                                            sign * s->dims[1]})));
    } else if (kind == kCapsule) {
      out.push_back(add(s->w[0], mul(n, s->radius)));
      out.push_back(add(s->w[1], mul(n, s->radius)));
    } else {
      out.push_back(s->support(n));
    }
  }

  // (p, q): the support feature along n when a segment, else the support point twice (_Convex.support_segment)
  void support_segment(V3<T> n, T tol, V3<T>& p, V3<T>& q) const {
    const V3<T> sp = s->support(n);
    p = q = sp;
    if (s->kind == kHull) {
      const auto& w = s->w;
      size_t i = 0;
      for (size_t k = 1; k < w.size(); ++k)
        if (dot(w[k], n) > dot(w[i], n)) i = k;
      size_t j = i == 0 ? 1 : 0;
      T hj = -std::numeric_limits<T>::infinity();
      for (size_t k = 0; k < w.size(); ++k) {
        const T h = k == i ? -std::numeric_limits<T>::infinity() : dot(w[k], n);
        if (k == 0 || h > hj) hj = h, j = k;
      }
      if (dot(w[i], n) - hj <= tol) q = w[j];
    } else if (s->kind == kCylinder || s->kind == kCapsule) {
      V3<T> z;
      T half;
      if (s->kind == kCylinder) {
        z = s->zaxis(), half = s->dims[1];
      } else {
        const V3<T> ax = sub(s->w[1], s->w[0]);
        z = unit(ax), half = T(0.5) * std::sqrt(dot(ax, ax));
      }
      if (std::abs(dot(n, z)) * half <= tol) {
        const V3<T> mid = sub(sp, mul(z, dot(sub(sp, s->pos), z)));
        p = sub(mid, mul(z, half)), q = add(mid, mul(z, half));
      }
    }
  }
};

template <typename T>
inline int64_t ArgMaxV(const std::vector<T>& x) {  // collision._argmax: the first maximum
  int64_t best = 0;
  for (int64_t i = 1; i < static_cast<int64_t>(x.size()); ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// collision._reduce: kept candidates (idx, oks) of x (M) and the patch type
template <typename T>
int32_t Reduce(const std::vector<V3<T>>& y, const std::vector<T>& phi, const std::vector<char>& mask, V3<T> n,
               int64_t num, T tol, std::vector<T>& x, std::vector<T>& mind, std::vector<int64_t>& idx,
               std::vector<char>& oks) {
  const int64_t M = static_cast<int64_t>(y.size());
  const T inf = std::numeric_limits<T>::infinity();
  x.resize(M);
  for (int64_t m = 0; m < M; ++m) x[m] = mask[m] ? -phi[m] : -inf;
  const int64_t i1 = ArgMaxV(x);
  const V3<T> p1 = y[i1];
  for (int64_t m = 0; m < M; ++m) x[m] = mask[m] ? dot(sub(y[m], p1), sub(y[m], p1)) : T(-1);
  const int64_t i2 = ArgMaxV(x);
  const bool ok1 = mask[i1];
  const bool ok2 = ok1 && x[i2] > tol * tol;
  const V3<T> p2 = y[i2];
  V3<T> perp = cross(n, sub(p2, p1));
  perp = mul(perp, T(1) / std::max(std::sqrt(dot(perp, perp)), T(1e-30)));
  for (int64_t m = 0; m < M; ++m) x[m] = mask[m] ? std::abs(dot(sub(y[m], p1), perp)) : T(-1);
  const int64_t i3 = ArgMaxV(x);
  const bool ok3 = ok2 && x[i3] > tol;
  const int32_t kind = ok3 ? 3 : (ok2 ? 2 : (ok1 ? 1 : 0));
  idx = {i1, i2, i3};
  oks = {ok1, ok2, ok3};
  if (num >= 4) {
    const V3<T> p3 = y[i3];
    const V3<T> tri[3][3] = {{p1, p2, p3}, {p2, p3, p1}, {p3, p1, p2}};
    for (int64_t m = 0; m < M; ++m) x[m] = -inf;
    for (auto& e : tri) {
      V3<T> qv = cross(n, sub(e[1], e[0]));
      if (dot(qv, sub(e[2], e[0])) > 0) qv = mul(qv, T(-1));
      for (int64_t m = 0; m < M; ++m) x[m] = std::max(x[m], dot(sub(y[m], e[0]), qv));
    }
    for (int64_t m = 0; m < M; ++m)
      if (!mask[m]) x[m] = -inf;
    const int64_t i4 = ArgMaxV(x);
    const T scale = std::max(std::sqrt(dot(sub(p2, p1), sub(p2, p1))), T(1e-30));
    idx.push_back(i4);
    oks.push_back(ok3 && x[i4] > tol * scale);
  }
  if (num > static_cast<int64_t>(idx.size())) {
    mind.assign(M, inf);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j : idx) mind[m] = std::min(mind[m], dot(sub(y[m], y[j]), sub(y[m], y[j])));
    while (static_cast<int64_t>(idx.size()) < num) {  // farthest-point sampling
      for (int64_t m = 0; m < M; ++m) x[m] = mask[m] ? mind[m] : T(-1);
      const int64_t i = ArgMaxV(x);
      const bool ok = oks.back() && mind[i] > tol * tol;
      idx.push_back(i);
      oks.push_back(ok);
      for (int64_t m = 0; m < M; ++m) mind[m] = std::min(mind[m], dot(sub(y[m], y[i]), sub(y[m], y[i])));
    }
  }
  idx.resize(num), oks.resize(num);
  return kind;
}

// Per-thread work space of the manifold.
template <typename T>
struct ManifoldWork {
  std::vector<V3<T>> ea, eb, x, tmp;
  std::vector<T> phi, red, mind;
  std::vector<char> mask, ha, hb;
  std::vector<int64_t> idx;
  std::vector<char> oks;
};

// The pair's manifold at the axis n (collision.convex_pair's reference after its axis): contacts
// (point, phi, valid), the patch type and the choices (the kept candidates, on_a, on_b). With
// apart_exit (collision.CONVEX_APART_EXIT), a pair that n separates by more than the margin (every
// contact invalid: valid needs deep <= margin) skips the extremes, their entries and the reduction:
// its outputs are what they would give there (no candidate within the margin: each kept index 0,
// each point the deepest candidate's, phi far), so the result is the same either way.
template <typename T>
void Manifold(const Side<T>& A, const Side<T>& B, V3<T> n, T margin, int64_t num, T point_tol, T far, bool apart_exit,
              ManifoldWork<T>& w, T* point, T* phi_out, int32_t* valid, int32_t* kind_out, int32_t* choice) {
  const Shape<T>& a = *A.s;
  const Shape<T>& b = *B.s;
  const V3<T> mn = mul(n, T(-1));
  const V3<T> xa = a.support(n), yb = b.support(mn);
  const T deep = dot(n, sub(yb, xa));
  const T size = std::min(a.size(), b.size());
  const T close = std::max(T(1e-7), T(1e3) * std::numeric_limits<T>::epsilon()) * size;
  const auto e0a = B.entry(xa, n), e0b = A.entry(yb, mn);
  const bool on_a = e0a.second && e0a.first <= deep + close;
  const bool on_b = e0b.second && e0b.first <= deep + close;
  V3<T> sa0, sa1, sb0, sb1, ca, cb;
  A.support_segment(n, close, sa0, sa1);
  B.support_segment(mn, close, sb0, sb1);
  SegSeg(sa0, sa1, sb0, sb1, ca, cb);
  const V3<T> x0 = on_a ? add(xa, mul(n, T(0.5) * deep)) : (on_b ? sub(yb, mul(n, T(0.5) * deep)) : mul(add(ca, cb), T(0.5)));
  if (apart_exit && deep > margin) {  // apart along n beyond the margin: no contact (every valid below is
    // false); what the full manifold gives then: no candidate within the margin, so each kept index is 0
    for (int64_t j = 0; j < num; ++j) {
      valid[j] = 0;
      point[3 * j] = x0.x, point[3 * j + 1] = x0.y, point[3 * j + 2] = x0.z;
      phi_out[j] = far;
      choice[j] = 0;
    }
    *kind_out = 0;
    choice[num] = on_a, choice[num + 1] = on_b;
    return;
  }
  A.extremes(n, w.ea);
  B.extremes(mn, w.eb);
  const size_t Ma = w.ea.size(), Mb = w.eb.size(), M = 1 + Ma + Mb;
  w.x.resize(M), w.phi.resize(M), w.mask.resize(M), w.ha.resize(Ma), w.hb.resize(Mb);
  for (size_t i = 0; i < Ma; ++i) {
    const auto e = B.entry(w.ea[i], n);
    w.phi[1 + i] = e.first, w.ha[i] = e.second;
    w.x[1 + i] = add(w.ea[i], mul(n, T(0.5) * e.first));
  }
  for (size_t i = 0; i < Mb; ++i) {
    const auto e = A.entry(w.eb[i], mn);
    w.phi[1 + Ma + i] = e.first, w.hb[i] = e.second;
    w.x[1 + Ma + i] = sub(w.eb[i], mul(n, T(0.5) * e.first));
  }
  w.x[0] = x0;
  w.phi[0] = on_a ? e0a.first : (on_b ? e0b.first : dot(n, sub(cb, ca)));
  bool any_other = false;
  for (size_t i = 0; i < Ma; ++i) any_other = any_other || (w.ha[i] && w.phi[1 + i] <= deep + close);
  for (size_t i = 0; i < Mb; ++i) any_other = any_other || (w.hb[i] && w.phi[1 + Ma + i] <= deep + close);
  const bool first = on_a || on_b || !any_other;
  w.mask[0] = first && w.phi[0] <= margin;
  for (size_t i = 0; i < Ma; ++i) w.mask[1 + i] = w.ha[i] && w.phi[1 + i] <= margin;
  for (size_t i = 0; i < Mb; ++i) w.mask[1 + Ma + i] = w.hb[i] && w.phi[1 + Ma + i] <= margin;
  const int32_t kind = Reduce(w.x, w.phi, w.mask, n, num, point_tol * size, w.red, w.mind, w.idx, w.oks);
  bool any = false;
  for (int64_t j = 0; j < num; ++j) {
    const int64_t k = w.idx[j];
    const bool v = w.oks[j] && deep <= margin;
    any = any || v;
    valid[j] = v;
    point[3 * j] = w.x[k].x, point[3 * j + 1] = w.x[k].y, point[3 * j + 2] = w.x[k].z;
    phi_out[j] = v ? w.phi[k] : far;
    choice[j] = static_cast<int32_t>(k);
  }
  *kind_out = any ? kind : 0;
  choice[num] = on_a, choice[num + 1] = on_b;
}

template <ffi::DataType DT>
ffi::Error ConvexPair(ffi::Buffer<DT> va, ffi::Buffer<DT> ra, ffi::Buffer<DT> da, ffi::Buffer<DT> pos_a,
                      ffi::Buffer<DT> quat_a, ffi::Buffer<DT> vb, ffi::Buffer<DT> rb, ffi::Buffer<DT> db,
                      ffi::Buffer<DT> pos_b, ffi::Buffer<DT> quat_b, ffi::Buffer<DT> margin, int64_t kind_a,
                      int64_t kind_b, I32s via, I32s vib, I32s rings_a, I32s rings_b, int64_t width_a, int64_t width_b,
                      I32s lines_a, I32s lines_b, int64_t lattice, int64_t iterations, int64_t ring, int64_t starts,
                      double shrink, int64_t threads, int64_t num, double point_tol, double far, int64_t apart_exit,
                      ffi::ResultBuffer<DT> point, ffi::ResultBuffer<DT> normal, ffi::ResultBuffer<DT> phi,
                      ffi::ResultBuffer<ffi::S32> valid, ffi::ResultBuffer<ffi::S32> kind,
                      ffi::ResultBuffer<ffi::S32> choice) {
  using T = ffi::NativeType<DT>;
  if (ffi::Error bad = CheckInputs<DT>("jaxcontact convex pair", va, ra, da, pos_a, quat_a, vb, rb, db, pos_b, quat_b,
                                       margin, kind_a, kind_b, via, vib, width_a, width_b, lattice, iterations, ring,
                                       starts);
      bad.failure())
    return bad;
  if (num < 1) return ffi::Error::InvalidArgument("jaxcontact convex pair: bad search constants or num");
  const int64_t Ka = va.dimensions()[va.dimensions().size() - 2], Kb = vb.dimensions()[vb.dimensions().size() - 2];
  const int64_t B = static_cast<int64_t>(ra.element_count());
  const Search search{lattice, iterations, ring, starts, shrink};
  auto work = [&](int64_t lo, int64_t hi) {
    Shape<T> a, b;
    Side<T> A{&a}, Bs{&b};
    ManifoldWork<T> mw;
    std::vector<V3<T>> own, la, lb, cand, dirs;
    std::vector<T> vals;
    for (int64_t i = lo; i < hi; ++i) {
      const T* xa = va.typed_data() + i * Ka * 3;
      const T* xb = vb.typed_data() + i * Kb * 3;
      a.set(kind_a, xa, Ka, ra.typed_data()[i], da.typed_data() + i * 3, pos_a.typed_data() + i * 3,
            quat_a.typed_data() + i * 4, via);
      b.set(kind_b, xb, Kb, rb.typed_data()[i], db.typed_data() + i * 3, pos_b.typed_data() + i * 3,
            quat_b.typed_data() + i * 4, vib);
      const T m = margin.typed_data()[i];
      const T beyond = m + static_cast<T>(kMarginSlack) * (std::abs(m) + a.size() + b.size());
      V3<T> n = unit(sub(b.pos, a.pos));  // BestAxis's first exit, before the search's axes and lines
      if (!(Separation(a, b, n) > beyond)) {
        own.clear(), la.clear(), lb.clear();
        a.axes(b.pos, rings_a, width_a, xa, own);
        b.axes(a.pos, rings_b, width_b, xb, own);
        a.lines(lines_a, xa, la);
        b.lines(lines_b, xb, lb);
        n = BestAxis(a, b, own, la, lb, search, beyond, cand, vals, dirs);
      }
      T* out = normal->typed_data() + i * 3;
      out[0] = n.x, out[1] = n.y, out[2] = n.z;
      A.faces(rings_a, width_a, xa);
      Bs.faces(rings_b, width_b, xb);
      Manifold(A, Bs, n, m, num, static_cast<T>(point_tol), static_cast<T>(far), apart_exit != 0, mw, point->typed_data() + i * num * 3,
               phi->typed_data() + i * num, valid->typed_data() + i * num, kind->typed_data() + i,
               choice->typed_data() + i * (num + 2));
    }
  };
  jaxcontact::ForBatch(B, threads, 8, work);
  return ffi::Error::Success();
}

}  // namespace

#define JAXCONTACT_CONVEX(NAME, DT)                                                                         \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                                                                            \
      NAME, Convex<DT>,                                                                                     \
      ffi::Ffi::Bind()                                                                                      \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Attr<int64_t>("kind_a").Attr<int64_t>("kind_b").Attr<I32s>("via").Attr<I32s>("vib")              \
          .Attr<I32s>("rings_a").Attr<I32s>("rings_b").Attr<int64_t>("width_a").Attr<int64_t>("width_b")    \
          .Attr<I32s>("lines_a").Attr<I32s>("lines_b").Attr<int64_t>("lattice")                            \
          .Attr<int64_t>("iterations").Attr<int64_t>("ring").Attr<int64_t>("starts").Attr<double>("shrink") \
          .Attr<int64_t>("threads")                                                                         \
          .Ret<ffi::Buffer<DT>>());

JAXCONTACT_CONVEX(JaxcontactConvexF32, ffi::F32)
JAXCONTACT_CONVEX(JaxcontactConvexF64, ffi::F64)

#define JAXCONTACT_CONVEX_PAIR(NAME, DT)                                                                    \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                                                                            \
      NAME, ConvexPair<DT>,                                                                                 \
      ffi::Ffi::Bind()                                                                                      \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Arg<ffi::Buffer<DT>>()                                                                           \
          .Attr<int64_t>("kind_a").Attr<int64_t>("kind_b").Attr<I32s>("via").Attr<I32s>("vib")              \
          .Attr<I32s>("rings_a").Attr<I32s>("rings_b").Attr<int64_t>("width_a").Attr<int64_t>("width_b")    \
          .Attr<I32s>("lines_a").Attr<I32s>("lines_b").Attr<int64_t>("lattice")                            \
          .Attr<int64_t>("iterations").Attr<int64_t>("ring").Attr<int64_t>("starts").Attr<double>("shrink") \
          .Attr<int64_t>("threads").Attr<int64_t>("num").Attr<double>("point_tol").Attr<double>("far")      \
          .Attr<int64_t>("apart_exit")                                                                      \
          .Ret<ffi::Buffer<DT>>()                                                                           \
          .Ret<ffi::Buffer<DT>>()                                                                           \
          .Ret<ffi::Buffer<DT>>()                                                                           \
          .Ret<ffi::Buffer<ffi::S32>>()                                                                     \
          .Ret<ffi::Buffer<ffi::S32>>()                                                                     \
          .Ret<ffi::Buffer<ffi::S32>>());

JAXCONTACT_CONVEX_PAIR(JaxcontactConvexPairF32, ffi::F32)
JAXCONTACT_CONVEX_PAIR(JaxcontactConvexPairF64, ffi::F64)
