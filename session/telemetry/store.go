package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/session/store"
)

// Store returns st with its operations traced and measured: a span per
// operation (monty.store.get, ...) under a recording span, with the
// backend, the session id and the size; the operation's duration in
// monty.store.operation.duration. A store.Salvager stays one. Tracing an
// already traced store returns it as it is.
func (t *Telemetry) Store(st store.Store) store.Store {
	switch st.(type) {
	case *tracedStore, *tracedSalvager:
		return st
	}
	ts := &tracedStore{st: st, t: t.Or(), backend: store.Backend(st)}
	if sv, ok := st.(store.Salvager); ok {
		return &tracedSalvager{tracedStore: ts, sv: sv}
	}
	return ts
}

type tracedStore struct {
	st      store.Store
	t       *Telemetry
	backend string
}

type tracedSalvager struct {
	*tracedStore
	sv store.Salvager
}

// op starts an operation on id ("" for List); done ends it with the
// error, counting ErrNotFound as an answer, not a failure.
func (s *tracedStore) op(ctx context.Context, name, id string) (context.Context, func(err error, attrs ...attribute.KeyValue)) {
	ctx, span := Start(ctx, SpanStorePrefix+name, trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(AttrStoreBackend.String(s.backend), AttrStoreOperation.String(name))
		if id != "" {
			span.SetAttributes(AttrSessionID.String(id))
		}
	}
	start := time.Now()
	return ctx, func(err error, attrs ...attribute.KeyValue) {
		outcome := "ok"
		switch {
		case err == nil:
		case errors.Is(err, store.ErrNotFound):
			outcome = "not_found"
			attrs = append(attrs, AttrStoreFound.Bool(false))
			err = nil
		case errors.Is(err, store.ErrConflict):
			outcome = "conflict"
		default:
			outcome = "error"
		}
		s.t.storeDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(
			AttrStoreOperation.String(name), AttrStoreBackend.String(s.backend), AttrOutcome.String(outcome)))
		if span.IsRecording() {
			span.SetAttributes(attrs...)
			if err != nil {
				span.SetAttributes(AttrErrorType.String(outcome))
			}
		}
		End(span, err)
	}
}

func infoAttrs(info store.Info) []attribute.KeyValue {
	return []attribute.KeyValue{AttrStoreBytes.Int64(info.Size), AttrStoreSource.String(info.Source)}
}

func (s *tracedStore) Get(ctx context.Context, id string) (store.Object, error) {
	ctx, done := s.op(ctx, "get", id)
	obj, err := s.st.Get(ctx, id)
	if err != nil {
		done(err)
	} else {
		done(nil, infoAttrs(obj.Info)...)
	}
	return obj, err
}

func (s *tracedStore) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	ctx, done := s.op(ctx, "put", id)
	info, err := s.st.Put(ctx, id, data, cond)
	done(err, AttrStoreBytes.Int(len(data)))
	return info, err
}

func (s *tracedStore) Delete(ctx context.Context, id string) error {
	ctx, done := s.op(ctx, "delete", id)
	err := s.st.Delete(ctx, id)
	done(err)
	return err
}

func (s *tracedStore) Stat(ctx context.Context, id string) (store.Info, error) {
	ctx, done := s.op(ctx, "stat", id)
	info, err := s.st.Stat(ctx, id)
	if err != nil {
		done(err)
	} else {
		done(nil, infoAttrs(info)...)
	}
	return info, err
}

func (s *tracedStore) List(ctx context.Context) ([]store.Info, error) {
	ctx, done := s.op(ctx, "list", "")
	infos, err := s.st.List(ctx)
	if _, fatal := store.SplitListError(err); fatal != nil {
		done(fatal)
	} else {
		done(nil, AttrStoreEntries.Int(len(infos)))
	}
	return infos, err
}

// Close closes the store underneath.
func (s *tracedStore) Close() error { return s.st.Close() }

// Unwrap returns the store underneath.
func (s *tracedStore) Unwrap() store.Store { return s.st }

// Backend is the backend of the store underneath.
func (s *tracedStore) Backend() string { return s.backend }

func (s *tracedSalvager) Salvage(ctx context.Context, id string, max int64) ([]byte, string, error) {
	ctx, done := s.op(ctx, "salvage", id)
	data, token, err := s.sv.Salvage(ctx, id, max)
	done(err, AttrStoreBytes.Int(len(data)))
	return data, token, err
}
