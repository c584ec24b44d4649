package mcpclient

// MetaIdempotencyKey is the _meta key of a tools/call request that carries
// the call's idempotency key: set on the approved calls of tools that wait
// for a person's approval (the key the context carries,
// tools.WithIdempotencyKey), the same on every attempt at one decided
// call, across resumes and processes, so that a server able to
// deduplicate can make it once.
const MetaIdempotencyKey = "monty-go/idempotency-key"
