package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMinEligibleKinds(t *testing.T) {
	least := len(serviceKinds)
	for vt, kinds := range eligibleKinds() {
		if len(kinds) < least {
			least = len(kinds)
		}
		if len(kinds) == 0 {
			t.Errorf("%s has no service kinds", vehicleTypes[vt].name)
		}
	}
	if least != minEligibleKinds {
		t.Fatalf("minEligibleKinds = %d, catalog says %d", minEligibleKinds, least)
	}
}

func TestIMEIs(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range []int{0, 1, 9, 999_999, 1_000_000, 1_234_567, maxGeneratedDevices - 1} {
		s := imeiOf(d)
		if len(s) != 15 || seen[s] {
			t.Fatalf("imei of %d: %q", d, s)
		}
		seen[s] = true
		sum := 0
		for i := 0; i < 15; i++ { // Luhn over all 15 digits must be 0 mod 10
			n := int(s[14-i] - '0')
			if i%2 == 1 {
				n *= 2
				if n > 9 {
					n -= 9
				}
			}
			sum += n
		}
		if sum%10 != 0 {
			t.Errorf("imei %s fails the Luhn check", s)
		}
	}
}

func TestZipfCounts(t *testing.T) {
	for _, tc := range [][2]int{{10_000, 50}, {100, 5}, {3, 7}, {1, 1}} {
		counts := zipfCounts(tc[0], tc[1])
		sum := 0
		for i, n := range counts {
			sum += n
			if i > 0 && n > counts[0] {
				t.Errorf("zipf %v: bucket %d larger than the first", tc, i)
			}
		}
		if sum != tc[0] {
			t.Errorf("zipf %v: sum %d", tc, sum)
		}
	}
}

func TestSpreadAndDrawKinds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	counts := spread(r, 1_003, 10)
	sum := 0
	for _, n := range counts {
		sum += n
		if n < 100 || n > 101 {
			t.Fatalf("spread: %v", counts)
		}
	}
	if sum != 1_003 {
		t.Fatalf("spread sum %d", sum)
	}
	eligible := eligibleKinds()[vTrailer]
	kinds := drawKinds(r, eligible, minEligibleKinds)
	seen := map[int]bool{}
	for _, k := range kinds {
		if seen[k] || !serviceKinds[k].fits.has(vTrailer) {
			t.Fatalf("drawKinds: %v", kinds)
		}
		seen[k] = true
	}
}

func TestCopyRowEscapes(t *testing.T) {
	var r copyRow
	r.Int(7).Text("a\tb\\c\nd").Null().Bool(true).TextArray([]string{`x"y`, `z\w`}).TextArray(nil)
	want := "7\ta\\tb\\\\c\\nd\t\\N\tt\t{\"x\\\\\"y\",\"z\\\\\\\\w\"}\t{}"
	if string(r.b) != want {
		t.Fatalf("copy row\n got %q\nwant %q", r.b, want)
	}
}

// TestEvaluableValues: every type the rules evaluate from a number or an
// expression gets one a fleet would set (overspeed 90 to 130 km/h, every
// limit reached by some draw), the others none, and the draws depend on
// the random source only.
func TestEvaluableValues(t *testing.T) {
	ranges := map[string][2]int{"overspeed": {90, 130}, "fuel_drop": {10, 30}, "stopped": {10, 30}, "connection_no": {30, 120}}
	for _, typ := range eventTypes {
		r1, r2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
		seen := map[string]bool{}
		for range 200 {
			v := evaluableValue(r1, typ[0])
			if v != evaluableValue(r2, typ[0]) {
				t.Fatalf("%s: the same source drew another value", typ[0])
			}
			seen[v] = true
			switch lim, numeric := ranges[typ[0]]; {
			case numeric:
				var n int
				if _, err := fmt.Sscan(v, &n); err != nil || n < lim[0] || n > lim[1] {
					t.Fatalf("%s: %q, want a number in %v", typ[0], v, lim)
				}
			case typ[0] == "param":
				if !slices.Contains(paramRules, v) {
					t.Fatalf("param: %q", v)
				}
			case v != "":
				t.Fatalf("%s takes no checked_value, drew %q", typ[0], v)
			}
		}
		if lim, ok := ranges[typ[0]]; ok && (!seen[fmt.Sprint(lim[0])] || !seen[fmt.Sprint(lim[1])]) {
			t.Errorf("%s: %d draws never reached %v", typ[0], 200, lim)
		}
		if typ[0] == "param" && len(seen) != len(paramRules) {
			t.Errorf("param drew %d of %d expressions", len(seen), len(paramRules))
		}
	}
}
