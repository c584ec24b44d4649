"""Times wasm/monty.wasm under wasmtime (Cranelift), for scripts/bench/table.sh.

    python bench.py --serve [--module wasm/monty.wasm] [--dir testdata/bench] [--cache-dir DIR]
    python bench.py [--module ...] [--dir ...] [--cache-dir DIR] [--min-time 1.0] [--only KEY,...]

The same committed module that the Go runtime runs under wazero is run here
under wasmtime's Python bindings, speaking the module's ABI (docs/abi.md)
the way runtime/ does: the same requests (compile, run with the seven-item
limits array of runtime.DefaultLimits, REPL feed, dump, load, free), the
same WASI setup (no arguments, environment, files or stdout; real clocks
and random) and the same `monty.print` import. The difference between the
two columns is then the engine (wazero's compiler against Cranelift) plus
each host's own per-call work.

The workloads (class Workloads):

  NAME             the program NAME.py of --dir (fib25, sort, ...) compiled
                   once on an instance of its own, run to completion per op
  dump_load_1mb    a REPL holding data_1mb.py dumped and loaded into a
                   second instance, the loaded REPL freed (as the Go
                   column, without Go's envelope)
  new_interpreter  a fresh instance: store, WASI, instantiate, _initialize
  call_floor       the host's side of one run of tiny.py: the same request
                   copied in, wasm entered (an empty export,
                   monty_abi_version) and the same response taken out;
                   what a call costs from Python before the module does
                   anything

With --serve it is a worker of scripts/bench/benchcmp, which interleaves the
columns: it answers requests on stdin (see serve), keeping the compiled
module and each workload's warm instance. Without, it measures the batch
keys one after another, each warmed up once and then run in doubling
batches until at least --min-time seconds have passed (ns/op is the total
time over the total count), and prints "wasmtime <key> <ns/op>" lines: the
workloads above, tiny's call_floor measured in alternation with tiny,
tiny_net (tiny less call_floor: the module's share of a tiny call, what a
host with no per-call cost of its own would see) and compile (compiling
the module or loading the cached machine code, once). Progress and the
setup go to stderr.

Only the standard library and the `wasmtime` package are used (CBOR is
written and read by hand below: the module needs arrays, integers, text,
byte strings, null and booleans).
"""

import argparse
import ctypes
import hashlib
import importlib.metadata
import os
import struct
import sys
import time

import wasmtime
from wasmtime import _ffi as ffi

# wasmtime_func_call_unchecked(context, func, args_and_results, len, trap)
# bound with plain pointer arguments: ctypes then converts nothing but
# integers, which halves what entering wasm costs from Python.
_VP = ctypes.c_void_p
call_unchecked = ctypes.CFUNCTYPE(_VP, _VP, _VP, _VP, ctypes.c_size_t, _VP)(
    ctypes.cast(ffi.dll.wasmtime_func_call_unchecked, _VP).value
)

# Operation codes and statuses of monty_call (docs/abi.md).
OP_INFO, OP_COMPILE, OP_RUN = 0, 1, 2
OP_REPL_NEW, OP_FEED, OP_DUMP, OP_LOAD, OP_FREE = 5, 6, 7, 8, 9
STATUS_OK, STATUS_EXCEPTION, STATUS_FAILURE = 0, 1, 2
ABI_VERSION = 1
# The value encoding's tag of a tuple (docs/values.md).
TAG_TUPLE = 40000
# What the batch mode measures, in order.
BATCH_KEYS = ("tiny", "fib25", "loop", "sort", "join", "words", "dump_load_1mb", "new_interpreter")
WASMTIME_VERSION = importlib.metadata.version("wasmtime")

# Requests and responses this large make runtime/ call monty_release after
# the call (runtime/interpreter.go, releaseAbove); so does this host.
RELEASE_ABOVE = 1 << 20

# runtime.DefaultLimits() as runtime/ sends it for a run under a context
# that is never done: no time, memory or recursion limit, not line buffered
# (output collected), a 64 MiB value cap, the default integer cap of 2**21
# bits, and not cancellable (no budget armed, no clock read).
DEFAULT_LIMITS = [None, None, None, False, 64 << 20, 1 << 21, False]


# --- CBOR ---------------------------------------------------------------------

def _head(major, n):
    if n < 24:
        return bytes([major << 5 | n])
    if n < 1 << 8:
        return bytes([major << 5 | 24, n])
    if n < 1 << 16:
        return bytes([major << 5 | 25]) + struct.pack(">H", n)
    if n < 1 << 32:
        return bytes([major << 5 | 26]) + struct.pack(">I", n)
    return bytes([major << 5 | 27]) + struct.pack(">Q", n)


def encode(v):
    """Encodes the few shapes requests are made of, in shortest form."""
    if v is None:
        return b"\xf6"
    if v is False:
        return b"\xf4"
    if v is True:
        return b"\xf5"
    if isinstance(v, int):
        return _head(0, v) if v >= 0 else _head(1, -1 - v)
    if isinstance(v, str):
        b = v.encode()
        return _head(3, len(b)) + b
    if isinstance(v, (bytes, bytearray)):
        return _head(2, len(v)) + bytes(v)
    if isinstance(v, list):
        return _head(4, len(v)) + b"".join(encode(x) for x in v)
    raise TypeError(f"cannot encode {type(v).__name__}")


class Tagged:
    """A tagged item (a tuple, dict, ... in the module's value encoding)."""

    def __init__(self, tag, value):
        self.tag, self.value = tag, value

    def __repr__(self):
        return f"Tagged({self.tag}, {self.value!r})"


def decode(b):
    """Decodes one definite-length CBOR item (what the module emits)."""
    v, end = _decode(memoryview(b), 0)
    if end != len(b):
        raise ValueError(f"{len(b) - end} trailing bytes after a CBOR item")
    return v


def _decode(b, i):
    ib = b[i]
    major, info = ib >> 5, ib & 31
    i += 1
    if major == 7:
        if info == 20:
            return False, i
        if info == 21:
            return True, i
        if info == 22:
            return None, i
        if info == 27:
            return struct.unpack(">d", b[i:i + 8])[0], i + 8
        raise ValueError(f"unexpected simple value {info}")
    if info < 24:
        n = info
    elif info <= 27:
        size = 1 << (info - 24)
        n = int.from_bytes(b[i:i + size], "big")
        i += size
    else:
        raise ValueError("indefinite lengths are not expected from the module")
    if major == 0:
        return n, i
    if major == 1:
        return -1 - n, i
    if major == 2:
        return bytes(b[i:i + n]), i + n
    if major == 3:
        return str(b[i:i + n], "utf-8"), i + n
    if major == 4:
        items = []
        for _ in range(n):
            v, i = _decode(b, i)
            items.append(v)
        return items, i
    if major == 6:
        v, i = _decode(b, i)
        return Tagged(n, v), i
    raise ValueError(f"unexpected CBOR major type {major}")


# --- the module ---------------------------------------------------------------

class MontyError(Exception):
    pass


class Module:
    """The compiled module and a linker with WASI and `monty.print`."""

    def __init__(self, path, cache_dir):
        with open(path, "rb") as f:
            wasm = f.read()
        config = wasmtime.Config()
        config.strategy = "cranelift"
        config.cranelift_opt_level = "speed"
        # A 32-bit memory already gets wasmtime's whole 4 GiB reservation on
        # a 64-bit host, so it never moves; saying so lets this host keep
        # the memory's address instead of asking for it at every call (a
        # microsecond from Python). The machine code is the same: the .text
        # of the module compiled with and without this setting was checked
        # byte for byte (only the serialized engine settings differ).
        config.memory_may_move = False
        self.engine = wasmtime.Engine(config)
        start = time.perf_counter_ns()
        self.module, how = self._load(wasm, cache_dir)
        self.compile_ns = time.perf_counter_ns() - start
        print(f"wasmtime/bench.py: {how} in {self.compile_ns / 1e9:.2f} s", file=sys.stderr)
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_wasi()
        i32 = wasmtime.ValType.i32()
        self.linker.define_func(
            "monty", "print", wasmtime.FuncType([i32, i32, i32], [i32]), self._print, access_caller=True
        )
        # The instance being called, for the print import (one at a time).
        self.current = None

    def _load(self, wasm, cache_dir):
        """Compiles the module, or loads its machine code from cache_dir."""
        if not cache_dir:
            return wasmtime.Module(self.engine, wasm), "compiled the module (no cache)"
        key = hashlib.sha256(wasm).hexdigest()[:16]
        cached = os.path.join(cache_dir, f"monty-{key}-wasmtime-{WASMTIME_VERSION}.cwasm")
        if os.path.exists(cached):
            try:
                return wasmtime.Module.deserialize_file(self.engine, cached), f"loaded {cached}"
            except wasmtime.WasmtimeError as e:
                print(f"wasmtime/bench.py: stale cache {cached} ({e}); recompiling", file=sys.stderr)
        module = wasmtime.Module(self.engine, wasm)
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(module.serialize())
        os.replace(tmp, cached)
        return module, f"compiled the module (cached in {cached})"

    def _print(self, caller, stream, ptr, length):
        mem = caller["memory"]
        text = bytes(mem.read(caller, ptr, ptr + length))
        if self.current is not None:
            self.current.output.append((stream, text))
        return 0


class Interpreter:
    """One instance of the module, called the way runtime.Interpreter does."""

    def __init__(self, mod):
        self.mod = mod
        self.output = []
        self.store = wasmtime.Store(mod.engine)
        self.store.set_wasi(wasmtime.WasiConfig())  # no args, env, files or stdio
        self.instance = mod.linker.instantiate(self.store, mod.module)
        exports = self.instance.exports(self.store)
        exports["_initialize"](self.store)
        self.f_abi = exports["monty_abi_version"]
        self.memory = exports["memory"]
        self.f_reserve = exports["monty_reserve"]
        self.f_call = exports["monty_call"]
        self.f_release = exports["monty_release"]
        self.req_ptr, self.req_cap = 0, 0
        self.dead = False
        # monty_call goes through wasmtime_func_call_unchecked: the three i32
        # arguments in, the packed i64 result out of the same slots, without
        # the per-call type checks and conversions of Func.__call__ (about
        # 15 us from Python). What runs in wasm is the same.
        self._ctx = ctypes.cast(self.store._context(), _VP).value
        self._call_ref = ctypes.addressof(self.f_call._func)
        self._abi_ref = ctypes.addressof(self.f_abi._func)
        self._slots = (ffi.wasmtime_val_raw_t * 3)()
        self._slots_ref = ctypes.addressof(self._slots)
        # The slots' first 32 bits each, and the first slot's 64 (the
        # result), as ctypes objects made once: setting .value is cheaper
        # than indexing the union array at every call.
        size = ctypes.sizeof(ffi.wasmtime_val_raw_t)
        self._args = [ctypes.c_int32.from_address(self._slots_ref + i * size) for i in range(3)]
        self._result = ctypes.c_uint64.from_address(self._slots_ref)
        self._trap = ctypes.POINTER(ffi.wasm_trap_t)()
        self._trap_ref = ctypes.addressof(self._trap)
        # The linear memory as a memoryview over its whole 4 GiB reservation
        # (it never moves, see Module): copying a request in and a response
        # out is then a slice, not two ctypes calls. Only the accessible
        # part, self._size bytes, is ever touched; it is re-read when a
        # response lies past it (the memory grew).
        base = ctypes.addressof(self.memory.data_ptr(self.store).contents)
        self._mem = memoryview((ctypes.c_ubyte * (1 << 32)).from_address(base)).cast("B")
        self._size = self.memory.data_len(self.store)

    def _enter(self, func_ref):
        """Calls a wasm function with self._slots as arguments and results."""
        if self.dead:
            raise MontyError("the instance trapped earlier")
        self.mod.current = self
        err = call_unchecked(self._ctx, func_ref, self._slots_ref, 3, self._trap_ref)
        if err:
            raise wasmtime.WasmtimeError._from_ptr(ctypes.cast(err, ctypes.POINTER(ffi.wasmtime_error_t)))
        if self._trap:
            # A trap ends the instance (as in runtime/): the Trap object
            # takes the pointer, and the instance is not called again.
            self.dead = True
            raise wasmtime.Trap._from_ptr(self._trap)

    def _response(self, packed):
        ptr, n = packed >> 32, packed & 0xFFFFFFFF
        if ptr + n > self._size:
            self._size = self.memory.data_len(self.store)
            if ptr + n > self._size:
                raise MontyError("response outside memory")
        return self._mem[ptr:ptr + n]

    def call_raw(self, op, handle, req):
        """Runs op with request bytes req; returns the response bytes."""
        n = len(req)
        if n > self.req_cap:
            self.req_ptr = self.f_reserve(self.store, n)
            self.req_cap = n
            self._size = self.memory.data_len(self.store)
        self._mem[self.req_ptr:self.req_ptr + n] = req
        a = self._args
        a[0].value, a[1].value, a[2].value = op, handle, n
        self._enter(self._call_ref)
        self.last_packed = self._result.value
        resp = self._response(self.last_packed)
        if n > RELEASE_ABOVE or len(resp) > RELEASE_ABOVE:
            resp = resp.tobytes()
            self.f_release(self.store)
            self.req_ptr, self.req_cap = 0, 0
        return resp

    def empty_call(self, req, packed):
        """call_raw's host work around monty_abi_version, which does nothing:
        copy req in, enter wasm, take the response at packed. What one call
        costs this host (Python, ctypes, wasmtime's entry and exit)."""
        n = len(req)
        if n > self.req_cap:
            raise MontyError("empty_call needs the request buffer reserved")
        self._mem[self.req_ptr:self.req_ptr + n] = req
        a = self._args
        a[0].value, a[1].value, a[2].value = 0, 0, n
        self._enter(self._abi_ref)
        _ = self._result.value
        resp = self._response(packed)
        if n > RELEASE_ABOVE or len(resp) > RELEASE_ABOVE:
            raise MontyError("empty_call is for small calls")
        return resp

    def call(self, op, handle=0, request=None):
        """Runs op and returns the decoded payload of an ok response."""
        resp = self.call_raw(op, handle, b"" if request is None else encode(request))
        status, payload = decode(resp)
        if status == STATUS_OK:
            return payload
        if status == STATUS_EXCEPTION:
            raise MontyError(f"Python exception: {payload[3]}")
        raise MontyError(f"module refused op {op}: {payload}")

    def compile(self, code, script="main.py"):
        return self.call(OP_COMPILE, 0, [code, script, [], False])

    def run_request(self):
        return encode([[], DEFAULT_LIMITS])


# --- workloads ----------------------------------------------------------------

def py_repr(v):
    """Python's repr of a decoded value of the shapes the workloads return:
    None, bools, ints, floats, strs, lists and tuples."""
    if isinstance(v, Tagged) and v.tag == TAG_TUPLE:
        items = [py_repr(x) for x in v.value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(py_repr(x) for x in v) + "]"
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    raise MontyError(f"no repr for the value {v!r}")


class Program:
    """A program compiled once on an instance of its own and run to
    completion per op (as the Go column). Every answer is checked whole
    against the first one (the workloads are deterministic), which costs
    less than decoding it; value is the first answer's, decoded."""

    def __init__(self, mod, source, name):
        self.it = Interpreter(mod)
        self.handle = self.it.compile(source, name)
        self.req = self.it.run_request()
        self.expected = bytes(self.it.call_raw(OP_RUN, self.handle, self.req))
        status, self.value = decode(self.expected)
        if status != STATUS_OK:
            raise MontyError(f"{name} failed: {self.value}")

    def run(self):
        if self.it.call_raw(OP_RUN, self.handle, self.req) != self.expected:
            raise MontyError("a run answered differently")
        return self.value

    def empty(self):
        """The host's side of one run without the module's: the same
        request copied in, wasm entered (Interpreter.empty_call) and the
        last run's answer, still where that run left it, taken out."""
        if self.it.empty_call(self.req, self.it.last_packed) != self.expected:
            raise MontyError("the response buffer changed")


class DumpLoad:
    """A REPL holding data_1mb.py, dumped and loaded into a second
    instance per op, the loaded REPL freed (as the Go column, without Go's
    envelope)."""

    def __init__(self, mod, source):
        self.src, self.dst = Interpreter(mod), Interpreter(mod)
        self.repl = self.src.call(OP_REPL_NEW, 0, ["main.py", False])
        progress = self.src.call(OP_FEED, self.repl, [source, [], DEFAULT_LIMITS])
        if progress[0] != 0:
            raise MontyError(f"feeding data_1mb.py paused: {progress}")

    def run(self):
        kind, payload = self.src.call(OP_DUMP, self.repl, [None])
        handle, _, _ = self.dst.call(OP_LOAD, 0, [kind, payload, None])
        self.dst.call(OP_FREE, handle)


class Workloads:
    """The workloads of this file's docstring by name, each prepared at its
    first use."""

    def __init__(self, mod, bench_dir):
        self.mod, self.bench_dir = mod, bench_dir
        self.programs, self.prepared = {}, {}

    def source(self, file):
        with open(os.path.join(self.bench_dir, file)) as f:
            return f.read()

    def program(self, name):
        if name not in self.programs:
            file = f"{name}.py"
            self.programs[name] = Program(self.mod, self.source(file), file)
        return self.programs[name]

    def get(self, name):
        """One run of workload name (returning a program's value), and
        whether it has a value."""
        if name not in self.prepared:
            self.prepared[name] = self._prepare(name)
        return self.prepared[name]

    def _prepare(self, name):
        if name == "call_floor":
            return self.program("tiny").empty, False
        if name == "dump_load_1mb":
            return DumpLoad(self.mod, self.source("data_1mb.py")).run, False
        if name == "new_interpreter":
            return lambda: Interpreter(self.mod), False
        if not name.isidentifier():
            raise MontyError(f"no workload named {name!r}")
        return self.program(name).run, True


# --- measuring ----------------------------------------------------------------

def measure(min_time_ns, op, other=None):
    """ns per op over doubling batches of at least min_time_ns in total.
    With other, batches of other of the same size alternate with op's, so
    that both see the same load on a busy machine; both ns/op are returned."""
    op()  # warm up
    if other:
        other()
    total, total_other, count, batch = 0, 0, 0, 1
    clock = time.perf_counter_ns
    while total < min_time_ns:
        start = clock()
        for _ in range(batch):
            op()
        total += clock() - start
        if other:
            start = clock()
            for _ in range(batch):
                other()
            total_other += clock() - start
        count += batch
        if batch < 1 << 20:
            batch *= 2
    if other:
        return total / count, total_other / count
    return total / count


def batch(workloads, keys, min_time_ns):
    """Measures keys one after another, printing "wasmtime <key> <ns/op>"."""

    def report(key, ns):
        print(f"wasmtime {key} {ns:.1f}", flush=True)

    for key in keys:
        run, has_value = workloads.get(key)
        if key == "tiny":
            tiny = workloads.program("tiny")
            ns, floor_ns = measure(min_time_ns, run, tiny.empty)
            report("call_floor", floor_ns)
            report("tiny_net", ns - floor_ns)
        else:
            ns = measure(min_time_ns, run)
        if has_value:
            print(f"wasmtime/bench.py: {key} -> {py_repr(run())}", file=sys.stderr)
        report(key, ns)


def serve(workloads):
    """scripts/bench/benchcmp's worker: each line of stdin is a request "NAME N",
    run workload NAME (prepared at its first request, untimed) N times; the
    answer, a line on stdout, is "NS REPR": the mean ns of one run and the
    repr of the last run's value (nothing after NS for the workloads that
    are not programs), or "error MESSAGE". Ends at the end of stdin."""
    clock = time.perf_counter_ns
    for line in sys.stdin:
        try:
            name, n = line.split()
            n = int(n)
            if n < 1:
                raise ValueError("N must be at least 1")
            run, has_value = workloads.get(name)
            start = clock()
            for _ in range(n):
                value = run()
            ns = (clock() - start) / n
            reply = f"{ns:.1f} {py_repr(value)}" if has_value else f"{ns:.1f}"
        except Exception as e:  # the driver logs it and goes on
            reply = f"error {type(e).__name__}: {e}".replace("\n", " ")
        print(reply, flush=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--module", default=os.path.join(repo, "wasm", "monty.wasm"))
    p.add_argument("--dir", default=os.path.join(repo, "testdata", "bench"))
    p.add_argument("--min-time", type=float, default=1.0, help="seconds per workload (default 1)")
    p.add_argument("--cache-dir", default="", help="keep the compiled machine code here")
    p.add_argument("--only", default="", help="comma-separated workloads to run (default all)")
    p.add_argument("--serve", action="store_true", help="answer requests on stdin (scripts/bench/benchcmp's worker)")
    args = p.parse_args()

    mod = Module(args.module, args.cache_dir)
    it = Interpreter(mod)
    if it.f_abi(it.store) != ABI_VERSION:
        sys.exit(f"wasmtime/bench.py: {args.module} does not speak ABI version {ABI_VERSION}")
    version, abi = it.call(OP_INFO)
    print(f"wasmtime/bench.py: wasmtime {WASMTIME_VERSION}, monty {version}, ABI {abi}", file=sys.stderr)
    workloads = Workloads(mod, args.dir)
    if args.serve:
        serve(workloads)
        return
    print(f"wasmtime compile {mod.compile_ns:.1f}", flush=True)
    keys = [k for k in BATCH_KEYS if not args.only or k in args.only.split(",")]
    batch(workloads, keys, int(args.min_time * 1e9))


if __name__ == "__main__":
    main()
