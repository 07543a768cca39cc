// A sphere's or capsule's contacts against a convex hull (collision.round_hull), one fused CPU kernel
// (an XLA FFI custom call).
//
// The round body's core (a point, or a segment) against the hull's faces: each core end's closest
// point over the faces' fan triangles (outside) or its face of least penetration (inside); for a
// capsule also its segment against every hull edge, and where the segment meets the hull (Cyrus-Beck
// clipping against the face planes) the face of least penetration; then the round manifold
// (collision._manifold: the closest, and a capsule's end lying along the normal as a second
// contact). collision.py's round_hull written once as a loop: the same formulas and choices (first
// index of a minimum or maximum), to round-off. Values only: collision recomputes the derivatives
// from the pure-JAX reference (round_hull's custom_jvp). Every leading dimension is a batch of pairs
// (vmap_method="broadcast_all"), split over threads.
//
// Arguments (per pair): a's core vertices (Ka, 3) body frame (the first one or two used), a's radius
// (), pos_a (3), quat_a (4, w x y z); b's vertices (Kb, 3), pos_b (3), quat_b (4); the margin ().
// Attributes (static): capsule (0: a sphere, 1: a capsule), b's fan triangles (tris, three vertex
// indices each) and each one's face (owner), face rings padded to `width` (rings; collision._hull_faces), edges (two vertex indices
// each); num (contact slots), far (FAR), round_align (ROUND_ALIGN), the patch kinds (none, point,
// line), threads. Results: point (num, 3), normal (3), phi (num), valid (num) int32, kind () int32.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "parallel.h"
#include "vec3.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using I32s = ffi::Span<const int32_t>;
using namespace jaxcontact;

template <typename T>
struct Pose {
  T R[9];
  V3<T> p;
  Pose(const T* pos, const T* q) {  // rotations.quat_to_mat
    QuatToMat(q, R);
    p = {pos[0], pos[1], pos[2]};
  }
  V3<T> world(const T* v) const {
    return {p.x + R[0] * v[0] + R[1] * v[1] + R[2] * v[2], p.y + R[3] * v[0] + R[4] * v[1] + R[5] * v[2],
            p.z + R[6] * v[0] + R[7] * v[1] + R[8] * v[2]};
  }
};

template <typename T>
V3<T> SegPoint(V3<T> p0, V3<T> p1, V3<T> x) {  // collision._seg_point
  const V3<T> d = sub(p1, p0);
  const T dd = dot(d, d);
  const T t = Clip01(dot(sub(x, p0), d) / (dd > T(1e-30) ? dd : T(1)));
  return add(p0, mul(d, t));
}

template <typename T>
V3<T> PointTriangle(V3<T> x, V3<T> a, V3<T> b, V3<T> c) {  // collision._point_triangle
  const V3<T> nrm = cross(sub(b, a), sub(c, a));
  const T nn = std::max(dot(nrm, nrm), T(1e-30));
  const V3<T> proj = sub(x, mul(nrm, dot(sub(x, a), nrm) / nn));
  const bool inside = dot(cross(sub(b, a), sub(proj, a)), nrm) >= 0 && dot(cross(sub(c, b), sub(proj, b)), nrm) >= 0 &&
                      dot(cross(sub(a, c), sub(proj, c)), nrm) >= 0;
  if (inside) return proj;
  const V3<T> e[3] = {SegPoint(a, b, x), SegPoint(b, c, x), SegPoint(c, a, x)};
  int best = 0;
  T bd = dot(sub(e[0], x), sub(e[0], x));
  for (int i = 1; i < 3; ++i) {
    const T d = dot(sub(e[i], x), sub(e[i], x));
    if (d < bd) bd = d, best = i;
  }
  return e[best];
}

// The hull in the world: vertices, faces' outward unit normals and offsets.
template <typename T>
struct Hull {
  std::vector<V3<T>> w, nf;
  std::vector<T> df;
  void set(const Pose<T>& pose, const T* verts, int64_t K, I32s rings, int64_t width) {
    w.resize(K);
    for (int64_t i = 0; i < K; ++i) w[i] = pose.world(verts + 3 * i);
    const int64_t F = static_cast<int64_t>(rings.size()) / width;
    nf.resize(F), df.resize(F);
    for (int64_t f = 0; f < F; ++f) {  // Newell's normal over the padded ring, and its mean
      V3<T> s{0, 0, 0}, m{0, 0, 0};
      for (int64_t i = 0; i < width; ++i) {
        const V3<T> u = w[rings[f * width + i]], v = w[rings[f * width + (i + 1) % width]];
        s = add(s, cross(u, v));
        m = add(m, u);
      }
      nf[f] = unit(s);
      df[f] = dot(nf[f], mul(m, T(1) / static_cast<T>(width)));
    }
  }
};

// collision._point_hull: (closest hull point, signed distance, inside, face).
template <typename T>
void PointHull(V3<T> x, const Hull<T>& h, I32s tris, I32s owner, V3<T>& q, T& d, bool& inside, int64_t& f) {
  const int64_t F = static_cast<int64_t>(h.nf.size()), Tn = static_cast<int64_t>(tris.size()) / 3;
  f = 0;
  T best_sep = dot(h.nf[0], x) - h.df[0];
  for (int64_t i = 1; i < F; ++i) {
    const T s = dot(h.nf[i], x) - h.df[i];
    if (s > best_sep) best_sep = s, f = i;
  }
  inside = best_sep <= 0;
  // Outside: the closest point lies on a face x is in front of, so only those faces' triangles are
  // tried (and none whose plane is already farther than the best point): the same nearest point.
  V3<T> qk{0, 0, 0};
  T bd = std::numeric_limits<T>::infinity();
  if (!inside) {
    for (int64_t t = 0; t < Tn; ++t) {
      const T s = dot(h.nf[owner[t]], x) - h.df[owner[t]];
      if (s < 0 || s * s > bd) continue;
      const V3<T> c = PointTriangle(x, h.w[tris[3 * t]], h.w[tris[3 * t + 1]], h.w[tris[3 * t + 2]]);
      const T dd = dot(sub(c, x), sub(c, x));
      if (dd < bd) bd = dd, qk = c;
    }
  }
  if (inside) {
    q = sub(x, mul(h.nf[f], best_sep));
    d = best_sep;
  } else {
    q = qk;
    d = std::sqrt(std::max(dot(sub(x, qk), sub(x, qk)), T(1e-30)));
  }
}

struct Consts {
  int64_t num;
  double far, align;
  int32_t none, point, line;
};

// collision._manifold of m candidates: pa (on a's surface), pb, dist, dirs.
template <typename T>
void Manifold(int m, const V3<T>* pa, const V3<T>* pb, const T* dist, const V3<T>* dirs, T margin, const Consts& c,
              T* point, T* normal, T* phi, int32_t* valid, int32_t* kind) {
  const V3<T> n = dirs[0];
  V3<T> mid[3];
  T sep[3], far[3];
  bool ok[3];
  T smax = 0;
  for (int i = 0; i < m; ++i) {
    mid[i] = mul(add(pa[i], pb[i]), T(0.5));
    const V3<T> dv = sub(mid[i], mid[0]);
    sep[i] = std::sqrt(dot(dv, dv));
    smax = std::max(smax, sep[i]);
    ok[i] = dist[i] <= margin;
  }
  int j = 0;
  bool two = false;
  if (m > 1) {
    for (int i = 0; i < m; ++i) {
      const bool along = dot(dirs[i], n) >= static_cast<T>(c.align);
      far[i] = (ok[i] && along && sep[i] > T(1e-6) + T(1e-3) * smax) ? sep[i] : T(-1);
      if (far[i] > far[j]) j = i;
    }
    two = far[j] > 0;
  }
  const int64_t slots = std::min<int64_t>(c.num, 2);
  const V3<T> pts[2] = {mid[0], mid[j]};
  const T ph[2] = {dist[0], dist[j]};
  const bool va[2] = {ok[0], ok[0] && two};
  for (int64_t s = 0; s < c.num; ++s) {
    const bool v = s < slots && va[s];
    const V3<T> p = s < slots ? pts[s] : V3<T>{0, 0, 0};
    point[3 * s] = p.x, point[3 * s + 1] = p.y, point[3 * s + 2] = p.z;
    phi[s] = v ? ph[s] : static_cast<T>(c.far);
    valid[s] = v ? 1 : 0;
  }
  normal[0] = n.x, normal[1] = n.y, normal[2] = n.z;
  *kind = va[0] ? ((c.num > 1 && va[1]) ? c.line : c.point) : c.none;
}

template <ffi::DataType DT>
ffi::Error RoundHull(ffi::Buffer<DT> core, ffi::Buffer<DT> radius, ffi::Buffer<DT> pos_a, ffi::Buffer<DT> quat_a,
                     ffi::Buffer<DT> vb, ffi::Buffer<DT> pos_b, ffi::Buffer<DT> quat_b, ffi::Buffer<DT> margin,
                     int64_t capsule, I32s tris, I32s owner, I32s rings, int64_t width, I32s edges, int64_t num, double far,
                     double round_align, int64_t kind_none, int64_t kind_point, int64_t kind_line, int64_t apart_exit, int64_t threads,
                     ffi::ResultBuffer<DT> point, ffi::ResultBuffer<DT> normal, ffi::ResultBuffer<DT> phi,
                     ffi::ResultBuffer<ffi::S32> valid, ffi::ResultBuffer<ffi::S32> kind) {
  using T = ffi::NativeType<DT>;
  const std::string who = "jaxcontact round hull";
  if (core.dimensions().size() < 2 || vb.dimensions().size() < 2 || width < 1 || tris.size() < 3 ||
      rings.size() % width != 0 || edges.size() % 2 != 0 || num < 1)
    return ffi::Error::InvalidArgument(who + ": bad shapes or topology");
  const int64_t Ka = core.dimensions()[core.dimensions().size() - 2];
  const int64_t Kb = vb.dimensions()[vb.dimensions().size() - 2];
  if (Ka < (capsule ? 2 : 1)) return ffi::Error::InvalidArgument(who + ": too few core vertices");
  const int64_t B = static_cast<int64_t>(radius.element_count());
  const Consts c{num, far, round_align, static_cast<int32_t>(kind_none), static_cast<int32_t>(kind_point),
                 static_cast<int32_t>(kind_line)};
  auto work = [&](int64_t lo, int64_t hi) {
    Hull<T> h;
    for (int64_t i = lo; i < hi; ++i) {
      const Pose<T> pa(pos_a.typed_data() + 3 * i, quat_a.typed_data() + 4 * i);
      const Pose<T> pb(pos_b.typed_data() + 3 * i, quat_b.typed_data() + 4 * i);
      const T* xa = core.typed_data() + i * Ka * 3;
      const T* xb = vb.typed_data() + i * Kb * 3;
      const V3<T> e0 = pa.world(xa), e1 = capsule ? pa.world(xa + 3) : e0;
      const T r = radius.typed_data()[i], m = margin.typed_data()[i];
      // apart: the core farther from b's origin than a's radius, b's bounding sphere and the margin
      // (with a slack): no contact, whatever the features (the point and normal are then unspecified)
      T rb2 = 0;
      for (int64_t k = 0; k < Kb; ++k) rb2 = std::max(rb2, xb[3 * k] * xb[3 * k] + xb[3 * k + 1] * xb[3 * k + 1] + xb[3 * k + 2] * xb[3 * k + 2]);
      const V3<T> near = SegPoint(e0, e1, pb.p);
      const T reach = r + std::sqrt(rb2) + m;
      if (apart_exit && dot(sub(near, pb.p), sub(near, pb.p)) > reach * reach * T(1 + 1e-3) + T(1e-12)) {
        T* pt = point->typed_data() + i * num * 3;
        for (int64_t k = 0; k < 3 * num; ++k) pt[k] = 0;
        T* nr = normal->typed_data() + i * 3;
        const V3<T> n = unit(sub(pb.p, near));
        nr[0] = n.x, nr[1] = n.y, nr[2] = n.z;
        for (int64_t k = 0; k < num; ++k) phi->typed_data()[i * num + k] = static_cast<T>(far), valid->typed_data()[i * num + k] = 0;
        kind->typed_data()[i] = static_cast<int32_t>(kind_none);
        continue;
      }
      h.set(pb, xb, Kb, rings, width);
      V3<T> p[3], q[3], dirs[3];
      T d[3];
      int M = 1;
      if (!capsule) {
        bool inside;
        int64_t f;
        PointHull(e0, h, tris, owner, q[0], d[0], inside, f);
        p[0] = e0;
        dirs[0] = inside ? mul(h.nf[f], T(-1)) : unit(sub(q[0], e0));
      } else {
        M = 3;
        V3<T> q0, q1;
        T d0, d1;
        bool in0, in1;
        int64_t f0, f1;
        PointHull(e0, h, tris, owner, q0, d0, in0, f0);
        PointHull(e1, h, tris, owner, q1, d1, in1, f1);
        // the segment against every edge, then the ends' own closest points; the first nearest
        const int64_t E = static_cast<int64_t>(edges.size()) / 2;
        V3<T> pk{0, 0, 0}, qk{0, 0, 0};
        T bd = 0;
        for (int64_t k = 0; k < E + 2; ++k) {
          V3<T> cp, cq;
          if (k < E) {
            SegSeg(e0, e1, h.w[edges[2 * k]], h.w[edges[2 * k + 1]], cp, cq);
          } else {
            cp = k == E ? e0 : e1, cq = k == E ? q0 : q1;
          }
          const T dd = dot(sub(cq, cp), sub(cq, cp));
          if (k == 0 || dd < bd) bd = dd, pk = cp, qk = cq;
        }
        // Cyrus-Beck: does the segment meet the hull; the face of least penetration
        const int64_t F = static_cast<int64_t>(h.nf.size());
        T lo_t = 0, hi_t = 0, best_pen = 0, s0f = 0, s1f = 0;
        int64_t fp = 0;
        for (int64_t f = 0; f < F; ++f) {
          const T s0 = dot(h.nf[f], e0) - h.df[f], s1 = dot(h.nf[f], e1) - h.df[f];
          const T den = s0 - s1;
          const T t = std::abs(den) > T(1e-30) ? s0 / den : T(0);
          const T l = (s0 > 0 && s1 <= 0) ? t : (s0 > 0 ? T(2) : T(0));
          const T u = (s0 <= 0 && s1 > 0) ? t : (s1 > 0 ? T(-1) : T(1));
          lo_t = f == 0 ? l : std::max(lo_t, l);
          hi_t = f == 0 ? u : std::min(hi_t, u);
          const T pen = std::min(s0, s1);
          if (f == 0 || pen > best_pen) best_pen = pen, fp = f, s0f = s0, s1f = s1;
        }
        const bool meets = lo_t <= hi_t;
        const V3<T> nfp = h.nf[fp];
        const V3<T> deep = s0f <= s1f ? e0 : e1;
        const V3<T> p_main = meets ? deep : pk;
        const V3<T> q_main = meets ? sub(deep, mul(nfp, best_pen)) : qk;
        const T d_main = meets ? best_pen : std::sqrt(std::max(dot(sub(qk, pk), sub(qk, pk)), T(1e-30)));
        const V3<T> n = meets ? mul(nfp, T(-1)) : unit(sub(q_main, p_main));
        if (in0 && meets) d0 = s0f, q0 = sub(e0, mul(nfp, s0f));
        if (in1 && meets) d1 = s1f, q1 = sub(e1, mul(nfp, s1f));
        const V3<T> n0 = (in0 || meets) ? n : unit(sub(q0, e0));
        const V3<T> n1 = (in1 || meets) ? n : unit(sub(q1, e1));
        p[0] = p_main, p[1] = e0, p[2] = e1;
        q[0] = q_main, q[1] = q0, q[2] = q1;
        d[0] = d_main, d[1] = d0, d[2] = d1;
        dirs[0] = n, dirs[1] = n0, dirs[2] = n1;
      }
      V3<T> sa[3];
      T dist[3];
      for (int k = 0; k < M; ++k) sa[k] = add(p[k], mul(dirs[k], r)), dist[k] = d[k] - r;
      Manifold(M, sa, q, dist, dirs, m, c, point->typed_data() + i * num * 3, normal->typed_data() + i * 3,
               phi->typed_data() + i * num, valid->typed_data() + i * num, kind->typed_data() + i);
    }
  };
  jaxcontact::ForBatch(B, threads, 16, work);
  return ffi::Error::Success();
}

}  // namespace

#define JAXCONTACT_ROUND_HULL(NAME, DT)                                                                   \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                                                                          \
      NAME, RoundHull<DT>,                                                                                \
      ffi::Ffi::Bind()                                                                                    \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Arg<ffi::Buffer<DT>>()                                                                         \
          .Attr<int64_t>("capsule").Attr<I32s>("tris").Attr<I32s>("owner").Attr<I32s>("rings").Attr<int64_t>("width")         \
          .Attr<I32s>("edges").Attr<int64_t>("num").Attr<double>("far").Attr<double>("round_align")       \
          .Attr<int64_t>("kind_none").Attr<int64_t>("kind_point").Attr<int64_t>("kind_line").Attr<int64_t>("apart_exit")  \
          .Attr<int64_t>("threads")                                                                       \
          .Ret<ffi::Buffer<DT>>()                                                                         \
          .Ret<ffi::Buffer<DT>>()                                                                         \
          .Ret<ffi::Buffer<DT>>()                                                                         \
          .Ret<ffi::Buffer<ffi::S32>>()                                                                   \
          .Ret<ffi::Buffer<ffi::S32>>());

JAXCONTACT_ROUND_HULL(JaxcontactRoundHullF32, ffi::F32)
JAXCONTACT_ROUND_HULL(JaxcontactRoundHullF64, ffi::F64)
