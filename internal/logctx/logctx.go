// Package logctx carries log fields in a context, so that every line a
// package logs on behalf of a call names the call (its request id) without
// each package knowing where the id comes from. The transports put the
// fields in (server, server/httpapi through pipeline.WithRequestID); the
// packages a call passes through (pipeline, contextpack, inference,
// evaluator) keep their own injected *zap.Logger and add the context's
// fields where they log with From, or with Debug on a hot path.
package logctx

import (
	"context"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

type fieldsKey struct{}

// With returns ctx carrying fields after those it carried already.
func With(ctx context.Context, fields ...zap.Field) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	prev := Fields(ctx)
	all := make([]zap.Field, 0, len(prev)+len(fields))
	all = append(append(all, prev...), fields...)
	return context.WithValue(ctx, fieldsKey{}, all)
}

// Fields returns the fields ctx carries (nil for none). The slice is
// shared: append to a copy.
func Fields(ctx context.Context) []zap.Field {
	f, _ := ctx.Value(fieldsKey{}).([]zap.Field)
	return f
}

// From returns log with ctx's fields; log itself when ctx carries none.
// The fields are encoded only when a line is written (zap's WithLazy), so
// it costs a logger clone; on a hot path at a level usually off, Debug
// costs nothing.
func From(ctx context.Context, log *zap.Logger) *zap.Logger {
	if f := Fields(ctx); len(f) > 0 {
		return log.WithLazy(f...)
	}
	return log
}

// Debug logs msg at debug level with fields and ctx's fields, costing
// nothing beyond a level check when debug is off.
func Debug(ctx context.Context, log *zap.Logger, msg string, fields ...zap.Field) {
	if ce := log.Check(zapcore.DebugLevel, msg); ce != nil {
		ce.Write(append(fields, Fields(ctx)...)...)
	}
}
