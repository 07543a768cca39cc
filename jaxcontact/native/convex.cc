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
// candidate (the reference searches on; its contacts are none too). The margin is taken with a
// relative slack (MARGIN_SLACK) so that JAX's recomputation of φ at the axis, a round-off apart,
// also finds it beyond the margin. Attributes (static): kind_a, kind_b (0 hull, 1 sphere, 2 capsule, 3 cylinder,
// 4 ellipsoid); for a hull its vertex indices (via, vib), its faces' vertex rings padded to a
// width (rings_a, width_a; collision._hull_faces) and its edge classes' end vertices (lines_a, two
// a class); the search's constants (lattice, iterations, ring, shrink, starts). Result: n (3).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "parallel.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using I32s = ffi::Span<const int32_t>;

enum Kind : int64_t { kHull = 0, kSphere = 1, kCapsule = 2, kCylinder = 3, kEllipsoid = 4 };

template <typename T>
struct V3 {
  T x, y, z;
};
template <typename T>
inline V3<T> add(V3<T> a, V3<T> b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
template <typename T>
inline V3<T> sub(V3<T> a, V3<T> b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
template <typename T>
inline V3<T> mul(V3<T> a, T s) { return {a.x * s, a.y * s, a.z * s}; }
template <typename T>
inline T dot(V3<T> a, V3<T> b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
template <typename T>
inline V3<T> cross(V3<T> a, V3<T> b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
template <typename T>
inline V3<T> unit(V3<T> a) {  // collision._unit: finite at 0
  const T r = std::sqrt(std::max(dot(a, a), T(1e-30)));
  return {a.x / r, a.y / r, a.z / r};
}

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
    const T qw = q[0], qx = q[1], qy = q[2], qz = q[3];
    R[0] = 1 - 2 * (qy * qy + qz * qz), R[1] = 2 * (qx * qy - qw * qz), R[2] = 2 * (qx * qz + qw * qy);
    R[3] = 2 * (qx * qy + qw * qz), R[4] = 1 - 2 * (qx * qx + qz * qz), R[5] = 2 * (qy * qz - qw * qx);
    R[6] = 2 * (qx * qz - qw * qy), R[7] = 2 * (qy * qz + qw * qx), R[8] = 1 - 2 * (qx * qx + qy * qy);
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
      } else {
        delta = static_cast<T>(s.shrink) * delta;
      }
    }
    if (st == 0 || f > best_f) best_f = f, best_n = n;
  }
  return best_n;
}

template <ffi::DataType DT>
ffi::Error Convex(ffi::Buffer<DT> va, ffi::Buffer<DT> ra, ffi::Buffer<DT> da, ffi::Buffer<DT> pos_a,
                  ffi::Buffer<DT> quat_a, ffi::Buffer<DT> vb, ffi::Buffer<DT> rb, ffi::Buffer<DT> db,
                  ffi::Buffer<DT> pos_b, ffi::Buffer<DT> quat_b, ffi::Buffer<DT> margin, int64_t kind_a, int64_t kind_b, I32s via, I32s vib,
                  I32s rings_a, I32s rings_b, int64_t width_a, int64_t width_b, I32s lines_a, I32s lines_b,
                  int64_t lattice, int64_t iterations, int64_t ring, int64_t starts, double shrink,
                  int64_t threads, ffi::ResultBuffer<DT> normal) {
  using T = ffi::NativeType<DT>;
  auto ad = va.dimensions(), bd = vb.dimensions();
  if (ad.size() < 2 || bd.size() < 2 || ad.back() != 3 || bd.back() != 3)
    return ffi::Error::InvalidArgument("jaxcontact convex: verts must be (..., K, 3)");
  const int64_t Ka = ad[ad.size() - 2], Kb = bd[bd.size() - 2];
  const int64_t B = static_cast<int64_t>(ra.element_count());
  if (static_cast<int64_t>(va.element_count()) != B * Ka * 3 || static_cast<int64_t>(vb.element_count()) != B * Kb * 3 ||
      static_cast<int64_t>(pos_a.element_count()) != B * 3 || static_cast<int64_t>(quat_b.element_count()) != B * 4 ||
      static_cast<int64_t>(da.element_count()) != B * 3 || static_cast<int64_t>(db.element_count()) != B * 3 ||
      static_cast<int64_t>(rb.element_count()) != B || static_cast<int64_t>(margin.element_count()) != B)
    return ffi::Error::InvalidArgument("jaxcontact convex: inconsistent batch dimensions");
  for (int64_t k : {kind_a, kind_b})
    if (k < kHull || k > kEllipsoid) return ffi::Error::InvalidArgument("jaxcontact convex: unknown kind");
  if ((kind_a == kHull && (via.size() == 0 || width_a < 1)) || (kind_b == kHull && (vib.size() == 0 || width_b < 1)))
    return ffi::Error::InvalidArgument("jaxcontact convex: a hull without vertices or faces");
  if ((kind_a == kCapsule && Ka < 2) || (kind_b == kCapsule && Kb < 2) || (kind_a == kSphere && Ka < 1) ||
      (kind_b == kSphere && Kb < 1))
    return ffi::Error::InvalidArgument("jaxcontact convex: a sphere needs one core vertex, a capsule two");
  if (lattice < 1 || starts < 1 || ring < 1 || iterations < 0)
    return ffi::Error::InvalidArgument("jaxcontact convex: bad search constants");
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
