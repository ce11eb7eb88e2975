// Package places holds the shapes of a fleet's zones (docs/design.md §15,
// Places): their validity and which points they contain. It has one job and
// no SQL or HTTP: storage checks a zone's shape with Compile before storing
// it and asks the compiled Region whether a reading's position lies in it.
//
// Geometry is spherical (github.com/golang/geo/s2): coordinates are WGS84
// degrees read as points on a sphere of the mean Earth radius EarthRadiusM,
// a polygon's edges are geodesics (great-circle arcs, not lines of constant
// latitude), a circle is the spherical cap of its radius around its center.
// The antimeridian and the poles are ordinary places: a polygon may cross
// the one and surround the other.
package places

import (
	"fmt"
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// EarthRadiusM is the radius of the sphere distances are measured on: the
// mean Earth radius (IUGG, (2a+b)/3 of WGS84), in metres.
const EarthRadiusM = 6_371_008.8

// The zone kinds.
const (
	KindCircle  = "circle"
	KindPolygon = "polygon"
)

// Bounds of a shape (docs/decisions.md, "Places").
const (
	// MinRadiusM and MaxRadiusM bound a circle's radius_m, in metres.
	MinRadiusM = 1
	MaxRadiusM = 1_000_000
	// MinPoints and MaxPoints bound the points of a polygon as given,
	// the closing point (equal to the first) included: 3 to 1,000
	// distinct corners.
	MinPoints = 4
	MaxPoints = 1_001
	// MinAreaM2 is the least area of a polygon, in square metres: a ring
	// whose corners lie on one geodesic (collinear) has none.
	MinAreaM2 = 1.0
)

// samePlace is the angle under which two corners are one place (about
// 6 mm): the same pole or antimeridian point spelt twice differs by the
// rounding of sin and cos.
const samePlace = s1.Angle(1e-9)

// Point is a position in WGS84 degrees.
type Point struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Shape is a zone's geometry as a client gives it: a circle (Center and
// RadiusM) or a polygon (Points, a closed ring). A nil field was not
// given.
type Shape struct {
	Kind    string
	Center  *Point
	RadiusM *float64
	Points  []Point
}

// Problem is one reason a shape is not valid: Field names the field as the
// body spells it ("radius_m", "points[3].lat"), Reason says what is wrong.
type Problem struct {
	Field  string
	Reason string
}

// Region is a valid shape, ready to answer containment. It is immutable
// and safe for concurrent use.
type Region struct {
	circle bool
	cap    s2.Cap
	loop   *s2.Loop
}

// Compile checks s and returns its Region, or every problem found (nil
// Region). A polygon is valid when it is a closed ring (the last point
// equals the first, as given) of MinPoints to MaxPoints points, every
// coordinate finite and in range, no point repeating the one before it, no
// two edges crossing or touching but at the corner they share, and its area
// at least MinAreaM2. Either winding is accepted: the polygon is always the
// smaller of the two regions its ring bounds (at most a hemisphere).
func Compile(s Shape) (*Region, []Problem) {
	switch s.Kind {
	case KindCircle:
		return compileCircle(s)
	case KindPolygon:
		return compilePolygon(s)
	}
	return nil, []Problem{{"kind", fmt.Sprintf("must be %q or %q", KindCircle, KindPolygon)}}
}

// checkPoint adds the problems of p, named field, to probs.
func checkPoint(field string, p Point, probs []Problem) []Problem {
	if math.IsNaN(p.Lat) || math.IsInf(p.Lat, 0) || p.Lat < -90 || p.Lat > 90 {
		probs = append(probs, Problem{field + ".lat", "a number from -90 to 90"})
	}
	if math.IsNaN(p.Lon) || math.IsInf(p.Lon, 0) || p.Lon < -180 || p.Lon > 180 {
		probs = append(probs, Problem{field + ".lon", "a number from -180 to 180"})
	}
	return probs
}

// compileCircle checks a circle: a center and a radius, no points.
func compileCircle(s Shape) (*Region, []Problem) {
	var probs []Problem
	if s.Center == nil {
		probs = append(probs, Problem{"center", "required for a circle"})
	} else {
		probs = checkPoint("center", *s.Center, probs)
	}
	switch r := s.RadiusM; {
	case r == nil:
		probs = append(probs, Problem{"radius_m", "required for a circle"})
	case math.IsNaN(*r) || *r < MinRadiusM || *r > MaxRadiusM:
		probs = append(probs, Problem{"radius_m", fmt.Sprintf("a number of metres from %d to %d", MinRadiusM, MaxRadiusM)})
	}
	if s.Points != nil {
		probs = append(probs, Problem{"points", "only for a polygon"})
	}
	if len(probs) > 0 {
		return nil, probs
	}
	c := s2.PointFromLatLng(s2.LatLngFromDegrees(s.Center.Lat, s.Center.Lon))
	return &Region{circle: true, cap: s2.CapFromCenterAngle(c, s1.Angle(*s.RadiusM/EarthRadiusM))}, nil
}

// compilePolygon checks a polygon: a closed ring of points, nothing else.
func compilePolygon(s Shape) (*Region, []Problem) {
	var probs []Problem
	if s.Center != nil {
		probs = append(probs, Problem{"center", "only for a circle"})
	}
	if s.RadiusM != nil {
		probs = append(probs, Problem{"radius_m", "only for a circle"})
	}
	n := len(s.Points)
	switch {
	case s.Points == nil:
		return nil, append(probs, Problem{"points", "required for a polygon"})
	case n < MinPoints || n > MaxPoints:
		return nil, append(probs, Problem{"points", fmt.Sprintf("from %d to %d points, the last equal to the first (3 to %d corners)",
			MinPoints, MaxPoints, MaxPoints-1)})
	}
	for i, p := range s.Points {
		probs = checkPoint(fmt.Sprintf("points[%d]", i), p, probs)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	if s.Points[n-1] != s.Points[0] {
		return nil, []Problem{{fmt.Sprintf("points[%d]", n-1), "the ring is not closed: the last point must equal the first"}}
	}
	vs := make([]s2.Point, n-1)
	for i, p := range s.Points[:n-1] {
		vs[i] = s2.PointFromLatLng(s2.LatLngFromDegrees(p.Lat, p.Lon))
	}
	for i := range vs {
		next := vs[(i+1)%len(vs)]
		if vs[i].Distance(next) < samePlace {
			return nil, []Problem{{fmt.Sprintf("points[%d]", i+1), "repeats the point before it (the same place)"}}
		}
		if vs[i].Distance(s2.Point{Vector: next.Mul(-1)}) < samePlace {
			return nil, []Problem{{fmt.Sprintf("points[%d]", i+1), "is antipodal to the point before it: no single edge joins them"}}
		}
	}
	if i, j, ok := crossing(vs); ok {
		return nil, []Problem{{"points", fmt.Sprintf("self-intersecting: the edge from points[%d] crosses or touches the edge from points[%d]", i, j)}}
	}
	loop := s2.LoopFromPoints(vs)
	if err := loop.Validate(); err != nil {
		return nil, []Problem{{"points", "not a valid ring: " + err.Error()}}
	}
	loop.Normalize()
	if a := loop.Area() * EarthRadiusM * EarthRadiusM; !(a >= MinAreaM2) {
		return nil, []Problem{{"points", fmt.Sprintf("encloses no area (at least %g m²): its points lie on one line", float64(MinAreaM2))}}
	}
	return &Region{loop: loop}, nil
}

// crossing reports the first pair of non-adjacent edges (i, j: the indexes
// of their first corners) that cross or share a point, found through an
// index of the ring's edges (s2's own Loop.Validate does not look for
// crossings in the Go port).
func crossing(vs []s2.Point) (int, int, bool) {
	idx := s2.NewShapeIndex()
	shape := s2.LaxLoopFromPoints(vs)
	idx.Add(shape)
	q := s2.NewCrossingEdgeQuery(idx)
	n := len(vs)
	for i := range n {
		a, b := vs[i], vs[(i+1)%n]
		for _, j := range q.Crossings(a, b, shape, s2.CrossingTypeAll) {
			if j == i || j == (i+1)%n || (j+1)%n == i {
				continue
			}
			return min(i, j), max(i, j), true
		}
	}
	return 0, 0, false
}

// Contains reports whether p lies in the region (on its boundary it may go
// either way, consistently). A point whose coordinates are out of range is
// in no region.
func (r *Region) Contains(p Point) bool {
	if math.IsNaN(p.Lat) || math.IsNaN(p.Lon) || p.Lat < -90 || p.Lat > 90 || p.Lon < -180 || p.Lon > 180 {
		return false
	}
	x := s2.PointFromLatLng(s2.LatLngFromDegrees(p.Lat, p.Lon))
	if r.circle {
		return r.cap.ContainsPoint(x)
	}
	return r.loop.ContainsPoint(x)
}

// AreaM2 returns the region's area in square metres.
func (r *Region) AreaM2() float64 {
	if r.circle {
		return r.cap.Area() * EarthRadiusM * EarthRadiusM
	}
	return r.loop.Area() * EarthRadiusM * EarthRadiusM
}
