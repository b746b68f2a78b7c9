package main

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"
)

// ratio is one sample's numerator and denominator under two strategies
// (a: the candidate, b: a baseline): recall over a set of samples is
// Σnum/Σden (identifiers pooled over samples, as the point estimates are).
type ratio struct {
	stratum    int // resampled within: the sample's repository
	aNum, aDen int
	bNum, bDen int
}

// interval is a difference of pooled recalls (a − b, in points) with its
// paired bootstrap 95% interval.
type interval struct {
	Diff, Lo, Hi float64
}

func pooledDiff(xs []ratio, idx []int) float64 {
	var an, ad, bn, bd int
	for _, i := range idx {
		an += xs[i].aNum
		ad += xs[i].aDen
		bn += xs[i].bNum
		bd += xs[i].bDen
	}
	return pct(an, ad) - pct(bn, bd)
}

// pairedBootstrap estimates a − b over the samples xs and its 95%
// percentile interval from reps resamples. Resampling is paired (a sample
// is drawn with both its values) and stratified (each stratum keeps its
// size, so every repository keeps its weight). key seeds the stream with
// seed, so a table's intervals do not depend on the order they are
// computed in.
func pairedBootstrap(xs []ratio, reps int, seed uint64, key string) interval {
	all := make([]int, len(xs))
	for i := range all {
		all[i] = i
	}
	iv := interval{Diff: pooledDiff(xs, all)}
	if len(xs) == 0 || reps <= 0 {
		iv.Lo, iv.Hi = iv.Diff, iv.Diff
		return iv
	}
	strata := map[int][]int{}
	var order []int
	for i, x := range xs {
		if _, ok := strata[x.stratum]; !ok {
			order = append(order, x.stratum)
		}
		strata[x.stratum] = append(strata[x.stratum], i)
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	diffs := make([]float64, reps)
	idx := make([]int, len(xs))
	for r := range diffs {
		k := 0
		for _, s := range order {
			members := strata[s]
			for range members {
				idx[k] = members[rng.IntN(len(members))]
				k++
			}
		}
		diffs[r] = pooledDiff(xs, idx)
	}
	sort.Float64s(diffs)
	iv.Lo, iv.Hi = quantile(diffs, 0.025), quantile(diffs, 0.975)
	return iv
}

// quantile of sorted xs, linear between order statistics.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}
