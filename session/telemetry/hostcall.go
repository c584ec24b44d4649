package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/monty-go/monty/runtime"
)

// HostCallSpans is the runtime.HostCallObserver that traces host calls:
// each call a runtime.Host makes of a host function or a host object's
// method is a SpanHostCall span under the span in the call's context, when
// that one records, with AttrFunction, AttrAsync and AttrMethod; a call
// that fails ends it failed, with AttrExceptionType when it raised a
// *runtime.Exception. A session sets it as its Host's Observer; set it on a
// Host you drive yourself for the same spans.
type HostCallSpans struct{}

// StartHostCall implements runtime.HostCallObserver.
func (HostCallSpans) StartHostCall(ctx context.Context, call *runtime.FunctionCall, async bool) (context.Context, func(error)) {
	if !Recording(ctx) {
		return ctx, nil
	}
	ctx, span := Start(ctx, SpanHostCall, trace.SpanKindInternal,
		AttrFunction.String(call.Name), AttrAsync.Bool(async), AttrMethod.Bool(call.ObjectID != nil))
	return ctx, func(err error) {
		var exc *runtime.Exception
		if errors.As(err, &exc) {
			span.SetAttributes(AttrExceptionType.String(Clip(exc.Type)))
		}
		End(span, err)
	}
}
