// The kernels' 3-vector algebra and what they share of the narrow phase's geometry (narrow.cc, convex.cc,
// round.cc): the same formulas as collision.py's (_unit, _seg_seg, rotations.quat_to_mat).
#pragma once

#include <algorithm>
#include <cmath>

namespace jaxcontact {

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
template <typename T>
inline T Clip01(T x) { return std::min(std::max(x, T(0)), T(1)); }

// rotations.quat_to_mat: the body → world matrix (row-major) of a unit quaternion (w, x, y, z).
template <typename T>
void QuatToMat(const T* q, T* r) {
  const T w = q[0], x = q[1], y = q[2], z = q[3];
  r[0] = 1 - 2 * (y * y + z * z); r[1] = 2 * (x * y - w * z); r[2] = 2 * (x * z + w * y);
  r[3] = 2 * (x * y + w * z); r[4] = 1 - 2 * (x * x + z * z); r[5] = 2 * (y * z - w * x);
  r[6] = 2 * (x * z - w * y); r[7] = 2 * (y * z + w * x); r[8] = 1 - 2 * (x * x + y * y);
}

// collision._seg_seg: the closest points (on p0–p1, on q0–q1) of two segments, either possibly a point.
template <typename T>
void SegSeg(V3<T> p0, V3<T> p1, V3<T> q0, V3<T> q1, V3<T>& cp, V3<T>& cq) {
  const V3<T> d1 = sub(p1, p0), d2 = sub(q1, q0), r = sub(p0, q0);
  const T a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r), c = dot(d1, r), b = dot(d1, d2);
  const T tiny = T(1e-30);
  const T denom = a * e - b * b;
  const bool crossed = denom > T(1e-12) * std::max(a * e, tiny);
  T s = crossed ? Clip01((b * f - c * e) / denom) : T(0);
  if (!(a > tiny)) s = T(0);
  if (!(e > tiny)) s = a > tiny ? Clip01(-c / a) : T(0);
  const T t = e > tiny ? (b * s + f) / e : T(0);
  const T tc = Clip01(t);
  if (t != tc) s = a > tiny ? Clip01((b * tc - c) / a) : T(0);
  cp = add(p0, mul(d1, s)), cq = add(q0, mul(d2, tc));
}

}  // namespace jaxcontact
