package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestPairedBootstrapDegenerate(t *testing.T) {
	// Every sample: a finds its identifier, b does not.
	var always []ratio
	for i := 0; i < 50; i++ {
		always = append(always, ratio{aNum: 1, aDen: 1, bNum: 0, bDen: 1})
	}
	if iv := pairedBootstrap(always, 500, 1, "k"); iv != (interval{100, 100, 100}) {
		t.Errorf("a always, b never: %+v, want 100 [100, 100]", iv)
	}
	// Identical strategies: the paired difference is 0 in every resample.
	var same []ratio
	for i := 0; i < 50; i++ {
		n := i % 3
		same = append(same, ratio{aNum: n, aDen: 3, bNum: n, bDen: 3})
	}
	if iv := pairedBootstrap(same, 500, 1, "k"); iv != (interval{0, 0, 0}) {
		t.Errorf("identical: %+v, want 0 [0, 0]", iv)
	}
}

// TestPairedBootstrapStratified: two repositories, one where a wins every
// sample and one where they tie. Resampling within each repository keeps
// both halves whole, so the pooled difference is 50 in every resample; a
// bootstrap that mixed repositories would spread it.
func TestPairedBootstrapStratified(t *testing.T) {
	var xs []ratio
	for i := 0; i < 40; i++ {
		xs = append(xs, ratio{stratum: 0, aNum: 1, aDen: 1, bNum: 0, bDen: 1})
		xs = append(xs, ratio{stratum: 1, aNum: 1, aDen: 1, bNum: 1, bDen: 1})
	}
	if iv := pairedBootstrap(xs, 500, 7, "k"); iv != (interval{50, 50, 50}) {
		t.Errorf("got %+v, want 50 [50, 50]", iv)
	}
}

// TestPairedBootstrapKnownWidth: independent Bernoulli samples, a with
// p=0.6 and b with p=0.5, one identifier each: the difference's standard
// error is sqrt((0.24+0.25)/n) and the 95% interval about ±1.96 of it.
func TestPairedBootstrapKnownWidth(t *testing.T) {
	const n = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	var xs []ratio
	for i := 0; i < n; i++ {
		x := ratio{aDen: 1, bDen: 1}
		if rng.Float64() < 0.6 {
			x.aNum = 1
		}
		if rng.Float64() < 0.5 {
			x.bNum = 1
		}
		xs = append(xs, x)
	}
	iv := pairedBootstrap(xs, 2000, 1, "k")
	half := 100 * 1.96 * math.Sqrt((0.24+0.25)/n)
	if w := (iv.Hi - iv.Lo) / 2; math.Abs(w-half) > 0.15*half {
		t.Errorf("half-width %.2f, want about %.2f", w, half)
	}
	if iv.Lo > iv.Diff || iv.Hi < iv.Diff {
		t.Errorf("interval %+v does not hold its estimate", iv)
	}
	if again := pairedBootstrap(xs, 2000, 1, "k"); again != iv {
		t.Errorf("not deterministic: %+v then %+v", iv, again)
	}
	if other := pairedBootstrap(xs, 2000, 2, "k"); other == iv {
		t.Errorf("another seed gave the same interval %+v", other)
	}
}

// TestPairedBootstrapPairing: when a and b move together (a = b + one
// identifier on a tenth of the samples), pairing makes the interval far
// narrower than the recalls' own spread.
func TestPairedBootstrapPairing(t *testing.T) {
	var xs []ratio
	for i := 0; i < 400; i++ {
		b := i % 2
		a := b
		if i%10 == 0 && b == 0 {
			a = 1
		}
		xs = append(xs, ratio{aNum: a, aDen: 1, bNum: b, bDen: 1})
	}
	iv := pairedBootstrap(xs, 1000, 1, "k")
	if iv.Diff != 10 || iv.Lo <= 5 || iv.Hi >= 15 {
		t.Errorf("got %+v, want 10 within about ±3", iv)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{0, 10, 20, 30, 40}
	for q, want := range map[float64]float64{0: 0, 0.5: 20, 1: 40, 0.125: 5} {
		if got := quantile(xs, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
}
