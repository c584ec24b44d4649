package tools

import "context"

type idempotencyKey struct{}

// WithIdempotencyKey returns ctx carrying key, the idempotency key of the
// call a host function makes with it: the same for every attempt at one
// decided call, across resumes and processes (session.ToolCall's). A
// function that reaches a service able to deduplicate passes it on (an
// MCP tool sends it in its request's _meta: package mcpclient).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// IdempotencyKey returns the key ctx carries (WithIdempotencyKey), or "".
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(idempotencyKey{}).(string)
	return k
}
