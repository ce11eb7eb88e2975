package places

import (
	"math"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// ring closes the corners given as lat, lon pairs.
func ring(coords ...float64) []Point {
	var ps []Point
	for i := 0; i+1 < len(coords); i += 2 {
		ps = append(ps, Point{coords[i], coords[i+1]})
	}
	return append(ps, ps[0])
}

// TestCompileRefuses: every class of bad shape is refused with a problem
// naming its field.
func TestCompileRefuses(t *testing.T) {
	big := make([]Point, 0, MaxPoints+1)
	for i := range MaxPoints {
		a := 2 * math.Pi * float64(i) / MaxPoints
		big = append(big, Point{10 * math.Sin(a), 10 * math.Cos(a)})
	}
	big = append(big, big[0])
	for _, tc := range []struct {
		name  string
		s     Shape
		field string
		says  string
	}{
		{"kind_unknown", Shape{Kind: "square"}, "kind", "must be"},
		{"kind_empty", Shape{}, "kind", "must be"},
		{"circle_no_center", Shape{Kind: KindCircle, RadiusM: ptr(10.0)}, "center", "required"},
		{"circle_no_radius", Shape{Kind: KindCircle, Center: &Point{1, 2}}, "radius_m", "required"},
		{"radius_zero", Shape{Kind: KindCircle, Center: &Point{1, 2}, RadiusM: ptr(0.0)}, "radius_m", "from 1"},
		{"radius_negative", Shape{Kind: KindCircle, Center: &Point{1, 2}, RadiusM: ptr(-5.0)}, "radius_m", "from 1"},
		{"radius_huge", Shape{Kind: KindCircle, Center: &Point{1, 2}, RadiusM: ptr(1_000_001.0)}, "radius_m", "to 1000000"},
		{"radius_nan", Shape{Kind: KindCircle, Center: &Point{1, 2}, RadiusM: ptr(math.NaN())}, "radius_m", "from 1"},
		{"radius_inf", Shape{Kind: KindCircle, Center: &Point{1, 2}, RadiusM: ptr(math.Inf(1))}, "radius_m", "from 1"},
		{"center_lat", Shape{Kind: KindCircle, Center: &Point{90.5, 2}, RadiusM: ptr(5.0)}, "center.lat", "-90 to 90"},
		{"center_lon", Shape{Kind: KindCircle, Center: &Point{1, -180.01}, RadiusM: ptr(5.0)}, "center.lon", "-180 to 180"},
		{"center_nan", Shape{Kind: KindCircle, Center: &Point{math.NaN(), 0}, RadiusM: ptr(5.0)}, "center.lat", "-90 to 90"},
		{"circle_with_points", Shape{Kind: KindCircle, Center: &Point{1, 2}, RadiusM: ptr(5.0), Points: ring(0, 0, 0, 1, 1, 1)}, "points", "only for a polygon"},
		{"polygon_no_points", Shape{Kind: KindPolygon}, "points", "required"},
		{"polygon_with_center", Shape{Kind: KindPolygon, Center: &Point{1, 2}, Points: ring(0, 0, 0, 1, 1, 1)}, "center", "only for a circle"},
		{"polygon_with_radius", Shape{Kind: KindPolygon, RadiusM: ptr(3.0), Points: ring(0, 0, 0, 1, 1, 1)}, "radius_m", "only for a circle"},
		{"too_few", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 1)}, "points", "from 4 to 1001"},
		{"too_many", Shape{Kind: KindPolygon, Points: big}, "points", "from 4 to 1001"},
		{"unclosed", Shape{Kind: KindPolygon, Points: []Point{{0, 0}, {0, 1}, {1, 1}, {1, 0}}}, "points[3]", "not closed"},
		{"point_lat", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 1, 91, 1)}, "points[2].lat", "-90 to 90"},
		{"point_lon", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 181, 1, 1)}, "points[1].lon", "-180 to 180"},
		{"point_inf", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, math.Inf(-1), 1, 1)}, "points[1].lon", "-180 to 180"},
		{"repeated", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 1, 0, 1, 1, 1)}, "points[2]", "repeats"},
		// the same place under two spellings: the pole, the antimeridian
		{"repeated_pole", Shape{Kind: KindPolygon, Points: ring(80, 0, 90, 0, 90, 50, 80, 90)}, "points[2]", "repeats"},
		{"repeated_antimeridian", Shape{Kind: KindPolygon, Points: ring(0, 170, 0, 180, 0, -180, 10, 175)}, "points[2]", "repeats"},
		{"bow_tie", Shape{Kind: KindPolygon, Points: ring(0, 0, 1, 1, 0, 1, 1, 0)}, "points", "self-intersecting"},
		{"touching_corner", Shape{Kind: KindPolygon, Points: ring(0, 0, 2, 0, 1, 1, 2, 2, 0, 2, 1, 1)}, "points", "self-intersecting"},
		{"collinear_equator", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 1, 0, 2)}, "points", "no area"},
		{"collinear_meridian", Shape{Kind: KindPolygon, Points: ring(10, 30, 20, 30, 30, 30, 25, 30)}, "points", ""},
		{"antipodal_edge", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 180, 45, 90)}, "points[1]", "antipodal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, probs := Compile(tc.s)
			if r != nil {
				t.Fatalf("accepted %+v", tc.s)
			}
			for _, p := range probs {
				if p.Field == tc.field && strings.Contains(p.Reason, tc.says) {
					return
				}
			}
			t.Fatalf("problems %+v, want %s: %q", probs, tc.field, tc.says)
		})
	}
}

// TestCompileContains: valid shapes, both windings, across the
// antimeridian and around the poles, contain what they should.
func TestCompileContains(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Shape
		in, out []Point
	}{
		{"circle", Shape{Kind: KindCircle, Center: &Point{52.52, 13.405}, RadiusM: ptr(1000.0)},
			[]Point{{52.52, 13.405}, {52.5289, 13.405}}, []Point{{52.5291, 13.405}, {-52.52, -166.595}}},
		{"circle_across_antimeridian", Shape{Kind: KindCircle, Center: &Point{0, 180}, RadiusM: ptr(100_000.0)},
			[]Point{{0, -179.5}, {0, 179.5}, {0.5, -180}}, []Point{{0, 178}, {0, -178}}},
		{"circle_at_pole", Shape{Kind: KindCircle, Center: &Point{90, 0}, RadiusM: ptr(200_000.0)},
			[]Point{{89, 0}, {89, 123}, {88.5, -179}}, []Point{{88, 0}, {-89, 0}}},
		{"square_ccw", Shape{Kind: KindPolygon, Points: ring(0, 0, 0, 1, 1, 1, 1, 0)},
			[]Point{{0.5, 0.5}}, []Point{{1.5, 0.5}, {-0.5, -179.5}}},
		{"square_cw_means_the_same", Shape{Kind: KindPolygon, Points: ring(0, 0, 1, 0, 1, 1, 0, 1)},
			[]Point{{0.5, 0.5}}, []Point{{1.5, 0.5}, {-0.5, -179.5}}},
		{"across_antimeridian", Shape{Kind: KindPolygon, Points: ring(-10, 170, -10, -170, 10, -170, 10, 170)},
			[]Point{{0, 180}, {0, -180}, {5, 175}, {-5, -175}}, []Point{{0, 0}, {0, 169}, {0, -169}}},
		{"around_north_pole", Shape{Kind: KindPolygon, Points: ring(80, 0, 80, 90, 80, 180, 80, -90)},
			[]Point{{90, 0}, {85, 45}, {89, -135}}, []Point{{70, 0}, {-90, 0}}},
		{"around_south_pole_cw", Shape{Kind: KindPolygon, Points: ring(-75, 0, -75, -120, -75, 120)},
			[]Point{{-90, 0}, {-80, 10}}, []Point{{-60, 0}, {90, 0}}},
		// a geodesic edge is not a parallel: between (60, 0) and (60, 90)
		// the edge bulges north, to latitude 67.8 at longitude 45
		{"geodesic_edges", Shape{Kind: KindPolygon, Points: ring(60, 0, 60, 90, 50, 90, 50, 0)},
			[]Point{{63, 45}, {67.5, 45}}, []Point{{68, 45}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, probs := Compile(tc.s)
			if r == nil {
				t.Fatalf("refused: %+v", probs)
			}
			for _, p := range tc.in {
				if !r.Contains(p) {
					t.Errorf("%v not contained", p)
				}
			}
			for _, p := range tc.out {
				if r.Contains(p) {
					t.Errorf("%v contained", p)
				}
			}
			if a := r.AreaM2(); !(a > 0 && a <= 2*math.Pi*EarthRadiusM*EarthRadiusM) {
				t.Errorf("area %g m²", a)
			}
		})
	}
}

// TestCompileLimits: the bounds themselves are accepted.
func TestCompileLimits(t *testing.T) {
	most := make([]Point, 0, MaxPoints)
	for i := range MaxPoints - 1 {
		a := -2 * math.Pi * float64(i) / (MaxPoints - 1)
		most = append(most, Point{10 * math.Sin(a), 10 * math.Cos(a)})
	}
	most = append(most, most[0])
	for _, s := range []Shape{
		{Kind: KindCircle, Center: &Point{-90, -180}, RadiusM: ptr(float64(MinRadiusM))},
		{Kind: KindCircle, Center: &Point{90, 180}, RadiusM: ptr(float64(MaxRadiusM))},
		{Kind: KindPolygon, Points: most},
		{Kind: KindPolygon, Points: ring(0, 0, 0, 0.0001, 0.0001, 0)},
	} {
		if r, probs := Compile(s); r == nil {
			t.Errorf("%s refused: %+v", s.Kind, probs)
		}
	}
	if r := (&Region{}); r.Contains(Point{math.NaN(), 0}) {
		t.Error("NaN contained")
	}
}
