package typecheck_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/typecheck"
)

// snippet50 is 50 lines of the code an agent writes: a dataclass, typed
// helpers, comprehensions, a loop, dict and string handling.
var snippet50 = func() string {
	var b strings.Builder
	b.WriteString(`import json
import math
from dataclasses import dataclass


@dataclass
class Order:
    id: int
    customer: str
    amount: float
    items: list[str]


def parse(raw: str) -> list[Order]:
    data = json.loads(raw)
    return [Order(d["id"], d["customer"], float(d["amount"]), list(d["items"])) for d in data]


def total(orders: list[Order]) -> float:
    return sum(o.amount for o in orders)


def by_customer(orders: list[Order]) -> dict[str, float]:
    out: dict[str, float] = {}
    for o in orders:
        out[o.customer] = out.get(o.customer, 0.0) + o.amount
    return out


def summary(orders: list[Order]) -> str:
    spend = by_customer(orders)
    top = sorted(spend.items(), key=lambda kv: kv[1], reverse=True)[:3]
    lines = [f"{name}: {amount:.2f}" for name, amount in top]
    return "\n".join(lines)


raw = json.dumps([{"id": i, "customer": f"c{i % 7}", "amount": i * 1.5, "items": ["a", "b"]} for i in range(20)])
orders = parse(raw)
mean = total(orders) / len(orders)
spread = math.sqrt(sum((o.amount - mean) ** 2 for o in orders) / len(orders))
big = [o for o in orders if o.amount > mean + spread]
counts = {o.customer: len(o.items) for o in big}
report = summary(orders)
`)
	for i := strings.Count(b.String(), "\n"); i < 50; i++ {
		fmt.Fprintf(&b, "print(report, counts, %d)\n", i)
	}
	return b.String()
}()

// BenchmarkCheck50Lines: one check of a 50-line snippet on a warm checker
// (an idle instance that has analysed the typeshed modules it uses).
func BenchmarkCheck50Lines(b *testing.B) {
	ctx := context.Background()
	c, err := typecheck.Default(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if res, err := c.Check(ctx, typecheck.Request{Code: snippet50}); err != nil || !res.Clean() {
		b.Fatalf("the benchmark snippet must check clean: %v %s", err, res.Text)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Check(ctx, typecheck.Request{Code: snippet50}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstCheck: what a fresh process pays for its first check with
// the machine code cached: load the checker from the cache, instantiate
// it, check the 50-line snippet (typeshed analysed from scratch).
func BenchmarkFirstCheck(b *testing.B) {
	ctx := context.Background()
	if _, err := typecheck.Default(ctx); err != nil { // fills the cache
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := typecheck.New(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Check(ctx, typecheck.Request{Code: snippet50}); err != nil {
			b.Fatal(err)
		}
		_ = c.Close(ctx)
	}
}

// BenchmarkLoadCached compares loading each module's machine code from a
// warm cache (what every process start pays per module): the interpreter
// (the run path) and the checker. The sum is what one module holding both
// would cost each start (wazero decodes and validates every function of a
// module before it looks in its cache).
func BenchmarkLoadCached(b *testing.B) {
	ctx := context.Background()
	b.Run("interpreter", func(b *testing.B) {
		if _, err := runtime.Default(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			e, err := runtime.NewEngine(ctx)
			if err != nil {
				b.Fatal(err)
			}
			_ = e.Close(ctx)
		}
	})
	b.Run("checker", func(b *testing.B) {
		if _, err := typecheck.Default(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			c, err := typecheck.New(ctx)
			if err != nil {
				b.Fatal(err)
			}
			_ = c.Close(ctx)
		}
	})
}

// BenchmarkCompileCold compares compiling each module with no cache.
func BenchmarkCompileCold(b *testing.B) {
	ctx := context.Background()
	b.Run("interpreter", func(b *testing.B) {
		for b.Loop() {
			e, err := runtime.NewEngine(ctx, runtime.WithCacheDir(""))
			if err != nil {
				b.Fatal(err)
			}
			_ = e.Close(ctx)
		}
	})
	b.Run("checker", func(b *testing.B) {
		for b.Loop() {
			c, err := typecheck.New(ctx, typecheck.WithCacheDir(""))
			if err != nil {
				b.Fatal(err)
			}
			_ = c.Close(ctx)
		}
	})
}
