package places

import "math"

// The oracle: containment and validity computed independently of s2, with
// plain 3-D vectors, to check places against (issue 38, "Differential
// test").

type vec [3]float64

func (a vec) dot(b vec) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
func (a vec) cross(b vec) vec {
	return vec{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}
func (a vec) norm() float64 { return math.Sqrt(a.dot(a)) }
func (a vec) unit() vec {
	n := a.norm()
	return vec{a[0] / n, a[1] / n, a[2] / n}
}
func (a vec) neg() vec { return vec{-a[0], -a[1], -a[2]} }

// toVec is the unit vector of p (degrees).
func toVec(p Point) vec {
	la, lo := p.Lat*math.Pi/180, p.Lon*math.Pi/180
	return vec{math.Cos(la) * math.Cos(lo), math.Cos(la) * math.Sin(lo), math.Sin(la)}
}

// toPoint is the position of the unit vector v.
func toPoint(v vec) Point {
	return Point{math.Atan2(v[2], math.Hypot(v[0], v[1])) * 180 / math.Pi, math.Atan2(v[1], v[0]) * 180 / math.Pi}
}

// haversineM is the great-circle distance between a and b in metres.
func haversineM(a, b Point) float64 {
	la1, la2 := a.Lat*math.Pi/180, b.Lat*math.Pi/180
	dla, dlo := la2-la1, (b.Lon-a.Lon)*math.Pi/180
	h := math.Sin(dla/2)*math.Sin(dla/2) + math.Cos(la1)*math.Cos(la2)*math.Sin(dlo/2)*math.Sin(dlo/2)
	return 2 * EarthRadiusM * math.Asin(math.Min(1, math.Sqrt(h)))
}

// winding sums the signed angles under which the edges of the ring vs (its
// corners, not closed) are seen from p, in the plane tangent at p, and
// returns it in turns: +1 when the ring goes counter-clockwise around p
// (p on its left), -1 clockwise, 0 when it does not separate p from -p.
func winding(vs []vec, p vec) int {
	sum := 0.0
	for i := range vs {
		a, b := vs[i], vs[(i+1)%len(vs)]
		u, w := p.cross(a), p.cross(b)
		sum += math.Atan2(p.dot(u.cross(w)), u.dot(w))
	}
	return int(math.Round(sum / (2 * math.Pi)))
}

// leftArea is the area, in steradians, of the region on the left of the
// ring vs (Gauss–Bonnet: 2π minus the sum of the turning angles at the
// corners of a geodesic polygon).
func leftArea(vs []vec) float64 {
	turn := 0.0
	n := len(vs)
	for i := range vs {
		a, b, c := vs[(i+n-1)%n], vs[i], vs[(i+1)%n]
		n1, n2 := a.cross(b), b.cross(c)
		turn += math.Atan2(b.dot(n1.cross(n2)), n1.dot(n2))
	}
	return 2*math.Pi - turn
}

// oracleContains says whether the polygon vs (corners, not closed) holds
// p: the smaller region its ring bounds. It assumes that region holds no
// two antipodal points (true of every shape within a cap smaller than a
// hemisphere, as the generated ones are): then exactly one of p and -p is
// in it when the ring separates them, and neither otherwise.
func oracleContains(vs []vec, p vec) bool {
	w := winding(vs, p)
	if w == 0 {
		return false
	}
	leftSmall := leftArea(vs) <= 2*math.Pi
	return (w > 0) == leftSmall
}

// edgeDistance is the angle from p to the great circle of the edge a-b:
// how near the boundary p is, an upper bound's complement.
func edgeDistance(a, b, p vec) float64 {
	n := a.cross(b).unit()
	return math.Asin(math.Min(1, math.Abs(n.dot(p))))
}

// arcsCross says whether the arcs a-b and c-d meet at a point at least
// margin (radians) inside both, by the two candidate intersections of
// their great circles.
func arcsCross(a, b, c, d vec, margin float64) bool {
	n1, n2 := a.cross(b), c.cross(d)
	x := n1.cross(n2)
	if x.norm() < 1e-12 {
		return false // one great circle: overlap is not a clean crossing
	}
	x = x.unit()
	on := func(p, q, x vec) bool {
		// x lies on the minor arc p-q, at least margin from its ends
		l := math.Acos(math.Max(-1, math.Min(1, p.dot(q))))
		dp := math.Acos(math.Max(-1, math.Min(1, p.dot(x))))
		dq := math.Acos(math.Max(-1, math.Min(1, q.dot(x))))
		return dp > margin && dq > margin && math.Abs(dp+dq-l) < 1e-9
	}
	for _, y := range []vec{x, x.neg()} {
		if on(a, b, y) && on(c, d, y) {
			return true
		}
	}
	return false
}
