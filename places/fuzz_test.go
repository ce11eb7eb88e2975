package places

import (
	"encoding/binary"
	"math"
	"testing"
)

// shapeOf reads a shape from fuzz bytes: the kind from the first byte,
// then float64 pairs (lat, lon), raw or scaled into range; a circle takes
// the first pair as center and the next number as radius, a polygon every
// pair, closed when the second byte is even.
func shapeOf(data []byte) Shape {
	if len(data) < 2 {
		return Shape{Kind: string(data)}
	}
	kind, closeIt := data[0], data[1]%2 == 0
	data = data[2:]
	var fs []float64
	for len(data) >= 8 && len(fs) < 2*MaxPoints+4 {
		f := math.Float64frombits(binary.LittleEndian.Uint64(data))
		if kind&2 != 0 && !math.IsNaN(f) && !math.IsInf(f, 0) {
			f = math.Mod(f, 180)
		}
		fs = append(fs, f)
		data = data[8:]
	}
	if kind%2 == 0 {
		s := Shape{Kind: KindCircle}
		if len(fs) >= 2 {
			s.Center = &Point{fs[0], fs[1]}
		}
		if len(fs) >= 3 {
			s.RadiusM = &fs[2]
		}
		return s
	}
	var pts []Point
	for i := 0; i+1 < len(fs); i += 2 {
		pts = append(pts, Point{math.Mod(fs[i], 90), fs[i+1]})
	}
	if closeIt && len(pts) > 0 {
		pts = append(pts, pts[0])
	}
	return Shape{Kind: KindPolygon, Points: pts}
}

// FuzzCompile: Compile never panics, and a shape it accepts is valid by
// the oracle: closed, in range, 3 to 1,000 corners, no corner repeating
// the one before, no two non-adjacent edges crossing clearly inside both
// (the oracle's own arc test), some area on its smaller side; Contains
// never panics on it.
func FuzzCompile(f *testing.F) {
	seed := func(kind, closeIt byte, fs ...float64) {
		b := []byte{kind, closeIt}
		for _, x := range fs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		f.Add(b)
	}
	seed(0, 0, 52.5, 13.4, 500)
	seed(0, 0, 91, 0, 0)
	seed(1, 0, 0, 0, 0, 1, 1, 1)
	seed(1, 0, 0, 0, 1, 1, 0, 1, 1, 0) // bow tie
	seed(1, 0, 0, 0, 0, 1, 0, 2)       // collinear
	seed(1, 1, 0, 0, 0, 1, 1, 1)       // not closed
	seed(1, 0, -10, 170, -10, -170, 10, -170, 10, 170)
	seed(1, 0, 80, 0, 80, 90, 80, 180, 80, -90)
	seed(3, 0, math.NaN(), 0, math.Inf(1), 0, 1, 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := shapeOf(data)
		r, probs := Compile(s)
		if r == nil {
			if len(probs) == 0 {
				t.Fatal("refused without a problem")
			}
			return
		}
		if len(probs) > 0 {
			t.Fatalf("accepted with problems %+v", probs)
		}
		_ = r.Contains(Point{0, 0})
		_ = r.Contains(Point{90, 0})
		if s.Kind == KindCircle {
			if s.Center == nil || s.RadiusM == nil || !(*s.RadiusM >= MinRadiusM && *s.RadiusM <= MaxRadiusM) ||
				math.Abs(s.Center.Lat) > 90 || math.Abs(s.Center.Lon) > 180 || s.Points != nil {
				t.Fatalf("accepted circle %+v", s)
			}
			return
		}
		n := len(s.Points)
		if n < MinPoints || n > MaxPoints || s.Points[0] != s.Points[n-1] {
			t.Fatalf("accepted %d points, closed %v", n, s.Points[0] == s.Points[n-1])
		}
		vs := make([]vec, n-1)
		for i, p := range s.Points[:n-1] {
			if !(math.Abs(p.Lat) <= 90 && math.Abs(p.Lon) <= 180) {
				t.Fatalf("accepted corner %v", p)
			}
			vs[i] = toVec(p)
		}
		m := len(vs)
		for i := range vs {
			if vs[i] == vs[(i+1)%m] {
				t.Fatalf("accepted a repeated corner at %d", i)
			}
		}
		if m <= 200 {
			for i := range vs {
				for j := i + 2; j < m; j++ {
					if i == 0 && j == m-1 {
						continue
					}
					if arcsCross(vs[i], vs[(i+1)%m], vs[j], vs[(j+1)%m], 1e-7) {
						t.Fatalf("accepted a ring whose edges %d and %d cross: %v", i, j, s.Points)
					}
				}
			}
		}
		if a := leftArea(vs); math.Min(a, 4*math.Pi-a)*EarthRadiusM*EarthRadiusM < MinAreaM2/2 && r.AreaM2() > 1e6 {
			t.Fatalf("accepted a ring of area %g sr (places: %g m²)", a, r.AreaM2())
		}
	})
}
