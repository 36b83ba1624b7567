package storage

import (
	"database/sql"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// WithTracerProvider makes the store start an OpenTelemetry span, from tp, for every
// statement it runs, as a child of the span in the statement's context (the request's).
// Spans carry the SQL text with placeholders but never the bound values, which include
// token signatures, password hashes and addresses. Without it (the default) statements are
// not traced and cost nothing extra.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// tracerName is the instrumentation scope of the statement spans.
const tracerName = "github.com/gatehouse-id/gatehouse/storage"

// spanKey is where a statement's span waits, in the statement's settings, for the callback
// that ends it.
const spanKey = "gatehouse:span"

// useTracing installs, when o asks for tracing, callbacks that wrap every kind of statement
// in a client span. They are ours rather than gorm.io/plugin/opentelemetry's because that
// plugin links the ClickHouse and MySQL drivers into every binary that uses it.
func useTracing(db *gorm.DB, o options) error {
	if o.tracer == nil {
		return nil
	}
	tracer := o.tracer.Tracer(tracerName)
	system := "postgresql"
	if db.Dialector.Name() == DialectSQLite {
		system = "sqlite"
	}
	start := func(op string) func(*gorm.DB) {
		return func(tx *gorm.DB) {
			if tx.Statement == nil || tx.Statement.Context == nil {
				return
			}
			_, span := tracer.Start(tx.Statement.Context, op, trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.String("db.system.name", system)))
			tx.InstanceSet(spanKey, span)
		}
	}
	end := func(tx *gorm.DB) {
		v, ok := tx.InstanceGet(spanKey)
		span, _ := v.(trace.Span)
		if !ok || span == nil {
			return
		}
		// The SQL has its placeholders ($1, ?) and never its values.
		span.SetAttributes(attribute.String("db.query.text", tx.Statement.SQL.String()),
			attribute.Int64("db.response.returned_rows", tx.Statement.RowsAffected))
		if tx.Statement.Table != "" {
			span.SetAttributes(attribute.String("db.collection.name", tx.Statement.Table))
		}
		if err := tx.Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	cb := db.Callback()
	return errors.Join(
		cb.Create().Before("gorm:create").Register("gatehouse:trace_start", start("db.create")),
		cb.Create().After("gorm:create").Register("gatehouse:trace_end", end),
		cb.Query().Before("gorm:query").Register("gatehouse:trace_start", start("db.query")),
		cb.Query().After("gorm:query").Register("gatehouse:trace_end", end),
		cb.Update().Before("gorm:update").Register("gatehouse:trace_start", start("db.update")),
		cb.Update().After("gorm:update").Register("gatehouse:trace_end", end),
		cb.Delete().Before("gorm:delete").Register("gatehouse:trace_start", start("db.delete")),
		cb.Delete().After("gorm:delete").Register("gatehouse:trace_end", end),
		cb.Raw().Before("gorm:raw").Register("gatehouse:trace_start", start("db.exec")),
		cb.Raw().After("gorm:raw").Register("gatehouse:trace_end", end),
		cb.Row().Before("gorm:row").Register("gatehouse:trace_start", start("db.row")),
		cb.Row().After("gorm:row").Register("gatehouse:trace_end", end),
	)
}

// PoolStats returns the statistics of the store's connection pool: connections open, in
// use and idle, and how often and how long callers waited for one.
func (s *Store) PoolStats() (sql.DBStats, error) {
	db, err := s.db.DB()
	if err != nil {
		return sql.DBStats{}, fmt.Errorf("storage: pool stats: %w", err)
	}
	return db.Stats(), nil
}
