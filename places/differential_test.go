package places

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// frame returns two unit vectors orthogonal to c and to each other.
func frame(c vec) (vec, vec) {
	ref := vec{0, 0, 1}
	if math.Abs(c[2]) > 0.9 {
		ref = vec{1, 0, 0}
	}
	e1 := c.cross(ref).unit()
	return e1, c.cross(e1).unit()
}

// around is the point at angle r (radians) from c in direction az.
func around(c vec, r, az float64) vec {
	e1, e2 := frame(c)
	d := vec{math.Cos(az)*e1[0] + math.Sin(az)*e2[0], math.Cos(az)*e1[1] + math.Sin(az)*e2[1], math.Cos(az)*e1[2] + math.Sin(az)*e2[2]}
	return vec{math.Cos(r)*c[0] + math.Sin(r)*d[0], math.Cos(r)*c[1] + math.Sin(r)*d[1], math.Cos(r)*c[2] + math.Sin(r)*d[2]}.unit()
}

// randomCenter draws a shape's center: anywhere, across the antimeridian
// or near a pole, a third each.
func randomCenter(rng *rand.Rand) Point {
	switch rng.IntN(3) {
	case 0:
		return Point{math.Asin(2*rng.Float64()-1) * 180 / math.Pi, rng.Float64()*360 - 180}
	case 1:
		lon := 175 + rng.Float64()*10
		if lon > 180 {
			lon -= 360
		}
		return Point{rng.Float64()*120 - 60, lon}
	default:
		lat := 80 + rng.Float64()*10
		if rng.IntN(2) == 0 {
			lat = -lat
		}
		return Point{lat, rng.Float64()*360 - 180}
	}
}

// randomPolygon draws a star-shaped polygon around a random center: n
// corners at sorted azimuths (no gap of π or more) and radii up to maxR
// radians (< π/2, so the shape lies in a cap smaller than a hemisphere
// and is simple); either winding.
func randomPolygon(rng *rand.Rand, maxR float64) (Shape, []vec) {
	c := toVec(randomCenter(rng))
	n := 3 + rng.IntN(40)
	if rng.IntN(10) == 0 {
		n = 3 + rng.IntN(998)
	}
	scale := maxR * math.Pow(10, -4*rng.Float64()) // 10 km .. maxR
	for {
		az := make([]float64, n)
		for i := range az {
			az[i] = rng.Float64() * 2 * math.Pi
		}
		slices.Sort(az)
		ok := true
		for i := range az {
			gap := az[(i+1)%n] - az[i]
			if i == n-1 {
				gap += 2 * math.Pi
			}
			if gap >= math.Pi*0.95 || gap < 1e-6 {
				ok = false
			}
		}
		if !ok {
			continue
		}
		vs := make([]vec, n)
		for i := range az {
			vs[i] = around(c, scale*(0.2+0.8*rng.Float64()), az[i])
		}
		if rng.IntN(2) == 0 {
			slices.Reverse(vs)
		}
		pts := make([]Point, 0, n+1)
		for _, v := range vs {
			pts = append(pts, toPoint(v))
		}
		pts = append(pts, pts[0])
		// the corners as places will read them (the degrees rounded)
		for i := range vs {
			vs[i] = toVec(pts[i])
		}
		return Shape{Kind: KindPolygon, Points: pts}, vs
	}
}

// TestContainsDifferential: over random shapes (a third of them across the
// antimeridian, a third around or near a pole) and random points (anywhere,
// near the shape, and just off its edges), Region.Contains agrees with the
// independent oracle of oracle_test.go: signed angles of the edges seen
// from the point (polygons), haversine distance (circles). Points within
// 1e-8 rad (6 cm) of an edge's great circle, or within 1 cm of a circle's
// boundary, are skipped and counted.
func TestContainsDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 15))
	shapes, checked, skipped, refused := 0, 0, 0, 0
	for range 600 {
		shapes++
		if rng.IntN(3) == 0 {
			c := randomCenter(rng)
			r := math.Pow(10, 6*rng.Float64()) // 1 m .. 1,000 km
			reg, probs := Compile(Shape{Kind: KindCircle, Center: &c, RadiusM: &r})
			if reg == nil {
				t.Fatalf("circle %v r %g refused: %+v", c, r, probs)
			}
			cv := toVec(c)
			for range 200 {
				var p Point
				if rng.IntN(2) == 0 {
					p = toPoint(vec{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}.unit())
				} else {
					p = toPoint(around(cv, r/EarthRadiusM*2*rng.Float64(), rng.Float64()*2*math.Pi))
				}
				d := haversineM(c, p)
				if math.Abs(d-r) < 0.01 {
					skipped++
					continue
				}
				checked++
				if got, want := reg.Contains(p), d < r; got != want {
					t.Fatalf("circle %v r %g m: %v at %g m: places %v, oracle %v", c, r, p, d, got, want)
				}
			}
			continue
		}
		s, vs := randomPolygon(rng, 1.2)
		reg, probs := Compile(s)
		if reg == nil {
			refused++
			t.Logf("generated polygon refused (%d corners): %+v", len(vs), probs)
			continue
		}
		var c vec
		for _, v := range vs {
			c = vec{c[0] + v[0], c[1] + v[1], c[2] + v[2]}
		}
		c = c.unit()
		for k := range 300 {
			var p vec
			switch {
			case k%3 == 0:
				p = vec{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}.unit()
			case k%3 == 1:
				p = around(c, 1.5*rng.Float64(), rng.Float64()*2*math.Pi)
			default:
				// just off an edge: its midpoint moved up to 10 m across it
				i := rng.IntN(len(vs))
				a, b := vs[i], vs[(i+1)%len(vs)]
				m := vec{a[0] + b[0], a[1] + b[1], a[2] + b[2]}.unit()
				n := a.cross(b).unit()
				off := (rng.Float64()*2 - 1) * 10 / EarthRadiusM
				p = vec{m[0] + off*n[0], m[1] + off*n[1], m[2] + off*n[2]}.unit()
			}
			pt := toPoint(p)
			p = toVec(pt)
			near := false
			for i := range vs {
				if edgeDistance(vs[i], vs[(i+1)%len(vs)], p) < 1e-8 {
					near = true
					break
				}
			}
			if near {
				skipped++
				continue
			}
			checked++
			if got, want := reg.Contains(pt), oracleContains(vs, p); got != want {
				t.Fatalf("polygon %v: %v: places %v, oracle %v", s.Points, pt, got, want)
			}
		}
	}
	t.Logf("%d shapes (%d generated polygons refused), %d points checked, %d skipped near a boundary", shapes, refused, checked, skipped)
	if refused > shapes/100 {
		t.Errorf("%d generated polygons refused", refused)
	}
}
