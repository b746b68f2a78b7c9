package logctx

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestFieldsReachEveryLine(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	ctx := With(context.Background(), zap.String("request_id", "r1"))
	ctx2 := With(ctx, zap.Int("attempt", 2))
	if From(context.Background(), log) != log {
		t.Error("From without fields should return the logger itself")
	}
	From(ctx, log).Info("a", zap.String("k", "v"))
	Debug(ctx2, log, "b")
	Debug(context.Background(), log, "c")
	want := []map[string]any{
		{"request_id": "r1", "k": "v"},
		{"request_id": "r1", "attempt": int64(2)},
		{},
	}
	for i, e := range logs.All() {
		got := e.ContextMap()
		if len(got) != len(want[i]) {
			t.Errorf("line %d: %v, want %v", i, got, want[i])
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, got[k], v)
			}
		}
	}
	// With does not change the context it extends.
	if len(Fields(ctx)) != 1 {
		t.Errorf("parent fields %v", Fields(ctx))
	}
}

func TestDebugOffCostsNoAllocation(t *testing.T) {
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(nopWriter{}), zapcore.InfoLevel))
	ctx := With(context.Background(), zap.String("request_id", "r1"))
	if n := testing.AllocsPerRun(100, func() { Debug(ctx, log, "x") }); n != 0 {
		t.Errorf("%v allocations per Debug below the level", n)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
