package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// dist is a summary of a sample; percentiles are nearest-rank (the value
// below which p% of the sample lies, an observed value, as ghz reports).
type dist struct {
	n                             int
	p50, p90, p99, mean, min, max float64
}

func describe(xs []float64) dist {
	if len(xs) == 0 {
		return dist{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return dist{n: len(s), p50: round3(percentile(s, 50)), p90: round3(percentile(s, 90)), p99: round3(percentile(s, 99)),
		mean: round3(sum / float64(len(s))), min: round3(s[0]), max: round3(s[len(s)-1])}
}

// percentile of sorted s by nearest rank.
func percentile(s []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

// bootstrap returns 95% intervals of the median of paired differences a-b
// and of median(a)/median(b)-1, resampling the rounds both have.
func bootstrap(a, b map[int]float64) (lo, hi, rlo, rhi float64) {
	var rounds []int
	for r := range a {
		if _, ok := b[r]; ok {
			rounds = append(rounds, r)
		}
	}
	if len(rounds) < 2 {
		return 0, 0, 0, 0
	}
	sort.Ints(rounds)
	rng := rand.New(rand.NewPCG(1, 2))
	const resamples = 2000
	meds := make([]float64, resamples)
	ratios := make([]float64, resamples)
	d := make([]float64, len(rounds))
	xa := make([]float64, len(rounds))
	xb := make([]float64, len(rounds))
	for i := range meds {
		for j := range rounds {
			r := rounds[rng.IntN(len(rounds))]
			d[j], xa[j], xb[j] = a[r]-b[r], a[r], b[r]
		}
		sort.Float64s(d)
		sort.Float64s(xa)
		sort.Float64s(xb)
		meds[i] = percentile(d, 50)
		ratios[i] = percentile(xa, 50)/percentile(xb, 50) - 1
	}
	sort.Float64s(meds)
	sort.Float64s(ratios)
	return round3(percentile(meds, 2.5)), round3(percentile(meds, 97.5)), round4(percentile(ratios, 2.5)), round4(percentile(ratios, 97.5))
}

// processCPU returns a process's user+system CPU time, all threads, dead
// ones included (/proc/PID/stat, clock ticks of 10 ms on Linux).
func processCPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("no pid")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	const clkTck = 100 // USER_HZ, fixed at 100 on Linux
	return time.Duration(ut+st) * time.Second / clkTck, nil
}
