//! The operations behind `monty_call`, and the handle table they act on.

use std::{borrow::Cow, cell::RefCell, collections::BTreeMap, num::NonZeroU32, time::Duration};

use abi::cbor::{DecodeError, Reader, Writer};
use monty::{
    Dump, GlobalMark, MontyRepl, MontyRun, ReplContinuationMode, ReplMarks, ReplProgress, ReplStartError, RunProgress,
    Session, SessionRef, detect_repl_continuation_mode, dump, dump_repl_delta,
};
use monty_types::{
    AssertMessageAnnotations, CallArgs, CompileOptions, DateTimeSource, ExcType, ExtFunctionResult,
    MAX_TIMEZONE_OFFSET_SECONDS, MIN_TIMEZONE_OFFSET_SECONDS, MontyException, MontyObject, MontyUuid, NameLookupResult,
    OsFunctionCall, OsPolicy, PrintWriter, ProcessTime, RandomSeed, RandomStart, ResourceLimits, ResourceTracker,
    SandboxTimeZone, SleepMode,
};
use num_bigint::BigInt;

use crate::{print::HostPrint, value};

pub const OP_INFO: u32 = 0;
pub const OP_COMPILE: u32 = 1;
pub const OP_RUN: u32 = 2;
pub const OP_START: u32 = 3;
pub const OP_RESUME: u32 = 4;
pub const OP_REPL_NEW: u32 = 5;
pub const OP_FEED: u32 = 6;
pub const OP_DUMP: u32 = 7;
pub const OP_LOAD: u32 = 8;
pub const OP_FREE: u32 = 9;
pub const OP_CONTINUATION: u32 = 10;
pub const OP_MEMORY: u32 = 11;
pub const OP_SET_CWD: u32 = 12;
pub const OP_DUMP_DELTA: u32 = 13;
pub const OP_GLOBAL_MARKS: u32 = 14;

const STATUS_OK: u64 = 0;
const STATUS_EXCEPTION: u64 = 1;
const STATUS_FAILURE: u64 = 2;

const KIND_PROGRAM: u64 = 0;
const KIND_RUN: u64 = 1;
const KIND_REPL: u64 = 2;

const LIMIT_NONE: u64 = 0;
const LIMIT_TIME: u64 = 1;
const LIMIT_MEMORY: u64 = 2;
const LIMIT_RECURSION: u64 = 3;
const LIMIT_OUTPUT: u64 = 4;
const LIMIT_INT_SIZE: u64 = 5;
const LIMIT_RESULT: u64 = 6;

/// The duration armed when the host sets none: the time check must run
/// whenever the host may cancel, which it does by advancing this instance's
/// monotonic clock past the armed budget.
const UNLIMITED: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Hard allocator ceiling above the soft `max_memory`: the soft limit raises
/// `MemoryError`, the hard one ends the instance.
const HARD_LIMIT_HEADROOM: usize = 64 << 20;

/// A REPL, idle or in the middle of a feed.
enum Repl {
    Idle(Box<MontyRepl>),
    Paused(Box<ReplProgress>),
}

/// What a handle refers to.
enum Slot {
    Program { run: Box<MontyRun>, script: String },
    Run { progress: Box<RunProgress>, script: String },
    Repl { repl: Repl, script: String },
}

/// The handles of this instance. Ordered rather than hashed: a lookup among
/// the few handles an instance holds costs less than hashing the key with
/// std's SipHash, which every call paid.
#[derive(Default)]
struct Table {
    slots: BTreeMap<u32, Slot>,
    next: u32,
    /// What `global_marks` last reported of each REPL's global slots.
    marks: BTreeMap<u32, Vec<(u8, u64)>>,
}

impl Table {
    fn insert(&mut self, slot: Slot) -> u32 {
        loop {
            self.next = self.next.wrapping_add(1);
            if self.next != 0 && !self.slots.contains_key(&self.next) {
                break;
            }
        }
        self.slots.insert(self.next, slot);
        self.marks.remove(&self.next);
        self.next
    }
}

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table::default());
    /// The encoding of the limits the last `run` request ended with, and
    /// what it says.
    static LAST_LIMITS: RefCell<(Vec<u8>, Option<Limits>)> = const { RefCell::new((Vec::new(), None)) };
}

/// A failed operation: either a Python exception or a misuse of the API.
enum Failure {
    Exception(MontyException),
    Api(String),
}

impl From<DecodeError> for Failure {
    fn from(e: DecodeError) -> Self {
        Self::Api(format!("bad request: {e}"))
    }
}

impl From<value::ValueError> for Failure {
    fn from(e: value::ValueError) -> Self {
        Self::Api(e)
    }
}

type OpResult = Result<(), Failure>;

/// Per-call limits sent by the host:
/// `[duration, memory, recursion, line_buffered, value_cap?, int_bits?,
/// cancellable?, turn_duration?]` (the last four, added later, are optional).
#[derive(Clone, Copy)]
struct Limits {
    duration: Option<Duration>,
    memory: Option<usize>,
    recursion: Option<usize>,
    line_buffered: bool,
    /// Most bytes an encoded result or call argument list may take.
    value_cap: Option<usize>,
    /// Largest integer one operation may produce, in bits.
    int_bits: Option<u64>,
    /// Whether the host may cancel the call (by advancing this instance's
    /// clock), so that a budget must be armed even without `duration`.
    cancellable: bool,
    /// The budget of each turn (from a start or resume to the next pause),
    /// Monty's `max_turn_duration`; `duration` is the feed's.
    turn_duration: Option<Duration>,
}

impl Limits {
    fn read(r: &mut Reader<'_>) -> Result<Self, Failure> {
        let n = r.array()?;
        if !matches!(n, 4 | 6 | 7 | 8) {
            return Err(Failure::Api("bad request: limits need 4, 6, 7 or 8 items".to_owned()));
        }
        let usize_of = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let mut limits = Self {
            duration: r.opt_uint()?.map(Duration::from_nanos),
            memory: r.opt_uint()?.map(usize_of),
            recursion: r.opt_uint()?.map(usize_of),
            line_buffered: r.bool()?,
            value_cap: None,
            int_bits: None,
            cancellable: true,
            turn_duration: None,
        };
        if n >= 6 {
            limits.value_cap = r.opt_uint()?.map(usize_of);
            limits.int_bits = r.opt_uint()?;
        }
        if n >= 7 {
            limits.cancellable = r.bool()?;
        }
        if n == 8 {
            limits.turn_duration = r.opt_uint()?.map(Duration::from_nanos);
        }
        Ok(limits)
    }

    /// [`read`](Self::read)s the limits that end a request, `bytes` being the
    /// rest of the request: a host that runs a program over and over sends
    /// the same bytes every time, and they are parsed once.
    fn read_last(r: &mut Reader<'_>, bytes: &[u8]) -> Result<Self, Failure> {
        LAST_LIMITS.with_borrow_mut(|(last, limits)| {
            if let Some(limits) = limits
                && last.as_slice() == bytes
            {
                return Ok(*limits);
            }
            let read = Self::read(r)?;
            last.clear();
            last.extend_from_slice(bytes);
            *limits = Some(read);
            Ok(read)
        })
    }

    /// Applies the caps that hold for every step of a run, resumes included.
    fn apply_caps(&self) {
        value::set_size_cap(self.value_cap);
        monty::MAX_INT_BITS.store(self.int_bits.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
    }

    fn tracker(&self) -> ResourceTracker {
        self.apply_caps();
        // Without a duration the budget is armed all the same, unless the host
        // says that it cannot cancel this call: then no clock needs watching.
        let budget = match self.duration {
            Some(duration) => Some(duration),
            None if self.cancellable => Some(UNLIMITED),
            None => None,
        };
        let mut limits = ResourceLimits {
            max_feed_duration: budget,
            max_turn_duration: self.turn_duration,
            max_memory: self.memory,
            // Suspensions are counted and bounded by the host.
            max_suspensions: usize::MAX,
            ..ResourceLimits::default()
        };
        if let Some(depth) = self.recursion {
            limits.max_recursion_depth = depth;
        }
        arm_hard_limit(self.memory);
        ResourceTracker::new(limits)
    }
}

/// Arms the allocator's hard ceiling for a soft memory limit: past it the
/// instance ends (the soft limit raises `MemoryError` first).
fn arm_hard_limit(memory: Option<usize>) {
    // Errors only when the allocator is not installed, which it is.
    let _ = monty_alloc::set_hard_limit(memory.map(|m| m.saturating_mul(2).saturating_add(HARD_LIMIT_HEADROOM)));
}

/// Runs one operation and returns its encoded response.
pub fn dispatch(op: u32, handle: u32, body: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    w.buf.reserve(64);
    // Status first; the payload follows in the same outer array, whose length
    // the op does not know up front, so the response is `[status, payload]`.
    w.array(2);
    w.uint(STATUS_OK);
    let mut r = Reader::new(body);
    let mut print = HostPrint::new(false);
    let result = TABLE.with_borrow_mut(|table| run_op(op, handle, body, &mut r, &mut w, table, &mut print));
    // Output still buffered belongs to this call, whatever its outcome.
    let flushed = print.flush();
    let result = match (result, flushed) {
        (Ok(()), Err(exc)) => Err(Failure::Exception(exc)),
        (result, _) => result,
    };
    match result {
        Ok(()) => w.buf,
        Err(Failure::Exception(exc)) => {
            let mut w = Writer::default();
            w.array(2);
            w.uint(STATUS_EXCEPTION);
            write_exception(&mut w, &exc, print.limit_hit);
            w.buf
        }
        Err(Failure::Api(msg)) => {
            let mut w = Writer::default();
            w.array(2);
            w.uint(STATUS_FAILURE);
            w.text(&msg);
            w.buf
        }
    }
}

fn run_op(
    op: u32,
    handle: u32,
    body: &[u8],
    r: &mut Reader<'_>,
    w: &mut Writer,
    t: &mut Table,
    print: &mut HostPrint,
) -> OpResult {
    match op {
        OP_INFO => {
            w.array(2);
            w.text(monty_types::MONTY_VERSION);
            w.uint(u64::from(crate::ABI_VERSION));
            Ok(())
        }
        OP_COMPILE => compile(r, w, t),
        OP_RUN => run(handle, body, r, w, t, print),
        OP_START => start(handle, r, w, t, print),
        OP_RESUME => resume(handle, r, w, t, print),
        OP_REPL_NEW => repl_new(r, w, t),
        OP_FEED => feed(handle, r, w, t, print),
        OP_DUMP => dump_op(handle, r, w, t),
        OP_LOAD => load(r, w, t),
        OP_FREE => {
            t.slots.remove(&handle);
            t.marks.remove(&handle);
            w.null();
            Ok(())
        }
        OP_CONTINUATION => {
            let code = r.text()?;
            let mode = match detect_repl_continuation_mode(code) {
                ReplContinuationMode::Complete => 0,
                ReplContinuationMode::IncompleteImplicit => 1,
                ReplContinuationMode::IncompleteBlock => 2,
            };
            w.uint(mode);
            Ok(())
        }
        OP_MEMORY => {
            // What `max_memory` measures: live bytes above the pristine baseline.
            let live = monty_types::LIVE_MEMORY.load(std::sync::atomic::Ordering::Relaxed);
            let baseline = monty_types::BASELINE_MEMORY.load(std::sync::atomic::Ordering::Relaxed);
            w.uint(live.saturating_sub(baseline) as u64);
            Ok(())
        }
        OP_SET_CWD => set_cwd(handle, r, w, t),
        OP_DUMP_DELTA => dump_delta(handle, r, w, t),
        OP_GLOBAL_MARKS => global_marks(handle, r, w, t),
        _ => Err(Failure::Api(format!("unknown operation {op}"))),
    }
}

/// `cwd` → null: moves an idle REPL to another working directory, as the
/// monty.v1 `Feed.cwd` does, without running code.
fn set_cwd(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &mut Table) -> OpResult {
    let cwd = r.text()?;
    if !cwd.starts_with('/') {
        return Err(Failure::Api(format!(
            "working directory {cwd:?} is not an absolute path"
        )));
    }
    match t.slots.get_mut(&handle) {
        Some(Slot::Repl {
            repl: Repl::Idle(repl), ..
        }) => repl.set_cwd(cwd),
        Some(_) => return Err(wrong_kind(handle, "an idle REPL")),
        None => return Err(no_handle(handle)),
    }
    w.null();
    Ok(())
}

/// The idle REPL behind a handle.
fn idle_repl(handle: u32, t: &Table) -> Result<(&MontyRepl, &str), Failure> {
    match t.slots.get(&handle) {
        Some(Slot::Repl {
            repl: Repl::Idle(repl),
            script,
        }) => Ok((repl.as_ref(), script.as_str())),
        Some(_) => Err(wrong_kind(handle, "an idle REPL")),
        None => Err(no_handle(handle)),
    }
}

/// `[memory?, [strings, bytes, long_ints, functions, eval_sources, inputs, names]]`
/// → `[bytes, marks]`: an idle REPL's dump without the append-only parts
/// the marks say an earlier dump carried, and the marks for the next one
/// (docs/abi.md, "Dump deltas").
fn dump_delta(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &Table) -> OpResult {
    r.array_of(2)?;
    let memory = r.opt_uint()?.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
    let _ = monty_alloc::set_hard_limit(memory.map(|m| m.saturating_mul(4).saturating_add(HARD_LIMIT_HEADROOM)));
    r.array_of(7)?;
    let from = ReplMarks {
        strings: r.uint()?,
        bytes: r.uint()?,
        long_ints: r.uint()?,
        functions: r.uint()?,
        eval_sources: r.uint()?,
        inputs: r.uint()?,
        names: r.uint()?,
    };
    let (repl, script) = idle_repl(handle, t)?;
    let (bytes, marks) =
        dump_repl_delta(script, repl, &from).map_err(|e| Failure::Api(format!("dump failed: {e:?}")))?;
    w.buf.reserve_exact(bytes.len() + 64);
    w.array(2);
    w.bytes(&bytes);
    w.array(7);
    for v in [
        marks.strings,
        marks.bytes,
        marks.long_ints,
        marks.functions,
        marks.eval_sources,
        marks.inputs,
        marks.names,
    ] {
        w.uint(v);
    }
    Ok(())
}

/// Tags of `global_marks` beyond the inline values' kinds (1 to 9), and
/// what the module keeps for a private slot (never reported).
const MARK_CODE: u8 = 0;
const MARK_PRIVATE: u8 = 253;
const MARK_GONE: u8 = 254;
const MARK_HEAP: u8 = 255;

/// `reset` → `[[slot, name, tag, value], ...]`: the public globals of an
/// idle REPL whose marks differ from what the last call reported (all of
/// them after a reset), and every one on the heap, in slot order. Tag 0 is
/// a function, class or module, 255 a value on the heap, 254 a slot no
/// longer bound; otherwise the kind of an inline value (the same tag and
/// value mean the same value). A slot's name is read once, when the slot is
/// new (to tell a private one), and again only for what is reported.
fn global_marks(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &mut Table) -> OpResult {
    let reset = r.bool()?;
    let Table { slots, marks, .. } = t;
    let repl = match slots.get(&handle) {
        Some(Slot::Repl {
            repl: Repl::Idle(repl), ..
        }) => repl,
        Some(_) => return Err(wrong_kind(handle, "an idle REPL")),
        None => return Err(no_handle(handle)),
    };
    let seen = marks.entry(handle).or_default();
    if reset {
        seen.clear();
    }
    for slot in seen.len()..repl.global_slots() {
        let private = repl.global_slot_name(slot).starts_with('_');
        seen.push((if private { MARK_PRIVATE } else { MARK_GONE }, 0));
    }
    let mut changed = Vec::new();
    for (slot, last) in seen.iter_mut().enumerate() {
        if last.0 == MARK_PRIVATE {
            continue;
        }
        let now = match repl.global_slot_mark(slot) {
            None => (MARK_GONE, 0),
            Some(GlobalMark::Code) => (MARK_CODE, 0),
            Some(GlobalMark::Fixed(tag, value)) => (tag, value),
            Some(GlobalMark::Heap) => (MARK_HEAP, 0),
        };
        if now.0 == MARK_HEAP || *last != now {
            *last = now;
            changed.push((slot, now));
        }
    }
    w.array(changed.len());
    for (slot, (tag, value)) in changed {
        w.array(4);
        w.uint(slot as u64);
        w.text(repl.global_slot_name(slot));
        w.uint(u64::from(tag));
        w.uint(value);
    }
    Ok(())
}

fn no_handle(handle: u32) -> Failure {
    Failure::Api(format!(
        "no such handle {handle} (freed, or belongs to another instance)"
    ))
}

fn wrong_kind(handle: u32, want: &str) -> Failure {
    Failure::Api(format!("handle {handle} is not {want}"))
}

/// The clock policy: the system clock, or every clock read asked of the host
/// (as `date.today`, `datetime.now` and `time.*` OS calls).
/// Sleeps are never shortened (Monty's default caps each at ten seconds):
/// the host waits for them and counts them against the time limit.
fn os_policy(host_clock: bool) -> OsPolicy {
    OsPolicy {
        datetime: if host_clock {
            DateTimeSource::CallHost
        } else {
            DateTimeSource::System
        },
        sleep: SleepMode::System(Duration::MAX),
        ..OsPolicy::default()
    }
}

/// The optional last element of compile and REPL requests:
/// `[timezone|null, cwd|null]`, or `[timezone|null, cwd|null, policy]` with
/// `policy = [assert|null, fixed_clock|null, fixed_zone|null, random|null,
/// elapsed]` (docs/abi.md). Requests without it keep UTC and `/`.
#[derive(Default)]
struct Sandbox {
    /// The sandbox's local zone (an IANA name such as `Europe/London`, or a
    /// fixed offset).
    timezone: Option<SandboxTimeZone>,
    /// The initial working directory (an absolute virtual path).
    cwd: Option<String>,
    /// How failed asserts are annotated.
    options: CompileOptions,
    /// A frozen clock, instead of the system's or the host's.
    fixed_clock: Option<DateTimeSource>,
    /// Where an unseeded `random` gets its first state.
    random: Option<RandomStart>,
    /// What `time.process_time()` reports.
    process_time: ProcessTime,
}

impl Sandbox {
    /// Reads the element if the request has one more than `base` items.
    fn read(r: &mut Reader<'_>, items: usize, base: usize) -> Result<Self, Failure> {
        if items == base {
            return Ok(Self::default());
        }
        let n = r.array()?;
        if n != 2 && n != 3 {
            return Err(Failure::Api("bad request: sandbox has the wrong length".to_owned()));
        }
        let timezone = match r.opt_text()? {
            Some(name) => {
                Some(SandboxTimeZone::named(name).map_err(|_| Failure::Api(format!("unknown time zone {name:?}")))?)
            }
            None => None,
        };
        let cwd = match r.opt_text()? {
            Some(cwd) if !cwd.starts_with('/') => {
                return Err(Failure::Api(format!(
                    "working directory {cwd:?} is not an absolute path"
                )));
            }
            cwd => cwd.map(str::to_owned),
        };
        let mut sandbox = Self {
            timezone,
            cwd,
            ..Self::default()
        };
        if n == 3 {
            sandbox.read_policy(r)?;
        }
        Ok(sandbox)
    }

    /// `[assert|null, fixed_clock|null, fixed_zone|null, random|null, elapsed]`
    fn read_policy(&mut self, r: &mut Reader<'_>) -> Result<(), Failure> {
        r.array_of(5)?;
        if let Some(max) = r.opt_uint()? {
            let max = u32::try_from(max).map_err(|_| Failure::Api("assert annotation size too large".to_owned()))?;
            self.options.assert_message_annotations = match NonZeroU32::new(max) {
                Some(n) => AssertMessageAnnotations::MaxBytes(n),
                None => AssertMessageAnnotations::Off,
            };
        }
        if !r.null()? {
            r.array_of(2)?;
            let unix_seconds = r.int()?;
            let microsecond = r.u32()?;
            if microsecond > 999_999 {
                return Err(Failure::Api("fixed clock: microsecond out of range".to_owned()));
            }
            self.fixed_clock = Some(DateTimeSource::Fixed {
                unix_seconds,
                microsecond,
            });
        }
        if !r.null()? {
            r.array_of(2)?;
            let offset_seconds = r.i32()?;
            if !(MIN_TIMEZONE_OFFSET_SECONDS..=MAX_TIMEZONE_OFFSET_SECONDS).contains(&offset_seconds) {
                return Err(Failure::Api("fixed time zone: offset out of range".to_owned()));
            }
            let name = r.opt_text()?.map(str::to_owned);
            self.timezone = Some(SandboxTimeZone::Fixed { offset_seconds, name });
        }
        if !r.null()? {
            let n = r.array()?;
            let kind = r.uint()?;
            self.random = Some(match (kind, n) {
                (1, 1) => RandomStart::CallHost,
                (2, 2) => RandomStart::Seed(RandomSeed::Int(BigInt::from_signed_bytes_le(r.bytes()?))),
                (3, 2) => {
                    let f = r.float()?;
                    if !f.is_finite() {
                        return Err(Failure::Api("random seed: a float seed must be finite".to_owned()));
                    }
                    RandomStart::Seed(RandomSeed::Float(f))
                }
                (4, 2) => RandomStart::Seed(RandomSeed::Str(r.text()?.to_owned())),
                (5, 2) => RandomStart::Seed(RandomSeed::Bytes(r.bytes()?.to_vec())),
                _ => return Err(Failure::Api("bad request: unknown random start".to_owned())),
            });
        }
        if r.bool()? {
            self.process_time = ProcessTime::Elapsed;
        }
        Ok(())
    }

    /// The OS policy with this sandbox's settings.
    fn policy(&mut self, host_clock: bool) -> OsPolicy {
        let mut policy = os_policy(host_clock);
        if let Some(zone) = self.timezone.take() {
            policy.timezone = zone;
        }
        if let Some(fixed) = self.fixed_clock.take() {
            policy.datetime = fixed;
        }
        if let Some(random) = self.random.take() {
            policy.random_start = random;
        }
        policy.process_time = self.process_time;
        policy
    }
}

/// Reads a request array of `base` items, or `base + 1` with a [`Sandbox`]
/// last; returns its length.
fn request_array(r: &mut Reader<'_>, base: usize) -> Result<usize, Failure> {
    let n = r.array()?;
    if n != base && n != base + 1 {
        return Err(Failure::Api("bad request: array has the wrong length".to_owned()));
    }
    Ok(n)
}

/// `[code, script_name, [input names], host_clock, sandbox?]` → handle
fn compile(r: &mut Reader<'_>, w: &mut Writer, t: &mut Table) -> OpResult {
    let items = request_array(r, 4)?;
    let code = r.text()?.to_owned();
    let script = r.text()?.to_owned();
    let n = r.array()?;
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        names.push(r.text()?.to_owned());
    }
    let host_clock = r.bool()?;
    let mut sandbox = Sandbox::read(r, items, 4)?;
    let mut run = MontyRun::new(code, &script, names, sandbox.options)
        .map_err(Failure::Exception)?
        .with_os_policy(sandbox.policy(host_clock));
    if let Some(cwd) = &sandbox.cwd {
        run.set_cwd(cwd);
    }
    w.uint(u64::from(t.insert(Slot::Program {
        run: Box::new(run),
        script,
    })));
    Ok(())
}

/// `[[inputs], limits]` → value. Runs to completion; host calls are not possible.
fn run(handle: u32, body: &[u8], r: &mut Reader<'_>, w: &mut Writer, t: &mut Table, print: &mut HostPrint) -> OpResult {
    r.array_of(2)?;
    let inputs = value::decode_list(r)?;
    let limits = Limits::read_last(r, &body[body.len() - r.remaining()..])?;
    *print = HostPrint::new(limits.line_buffered);
    let Some(Slot::Program { run, .. }) = t.slots.get_mut(&handle) else {
        return Err(t
            .slots
            .get(&handle)
            .map_or_else(|| no_handle(handle), |_| wrong_kind(handle, "a program")));
    };
    let result = run
        .run(inputs, limits.tracker(), PrintWriter::Callback(print))
        .map_err(Failure::Exception)?;
    value::encode(w, &result)?;
    Ok(())
}

/// `[[inputs], limits]` → `[run handle, progress]`
fn start(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &mut Table, print: &mut HostPrint) -> OpResult {
    r.array_of(2)?;
    let inputs = value::decode_list(r)?;
    let limits = Limits::read(r)?;
    *print = HostPrint::new(limits.line_buffered);
    let Some(Slot::Program { run, script }) = t.slots.get(&handle) else {
        return Err(t
            .slots
            .get(&handle)
            .map_or_else(|| no_handle(handle), |_| wrong_kind(handle, "a program")));
    };
    let script = script.clone();
    let progress = run
        .clone()
        .start(inputs, limits.tracker(), PrintWriter::Callback(print))
        .map_err(Failure::Exception)?;
    finish_run(progress, script, w, t, print)
}

/// Stores a paused run and writes `[handle, progress]`; a complete run gets
/// handle 0. A pause whose call arguments are over the size cap is aborted
/// at once with `MemoryError`, as if the call had raised it.
fn finish_run(
    mut progress: RunProgress,
    script: String,
    w: &mut Writer,
    t: &mut Table,
    print: &mut HostPrint,
) -> OpResult {
    w.array(2);
    loop {
        if let RunProgress::Complete(v) = &progress {
            w.uint(0);
            w.array(2);
            w.uint(0);
            value::encode(w, v)?;
            return Ok(());
        }
        let mut body = Writer::default();
        match write_run_progress(&mut body, &progress) {
            Ok(()) => {
                let id = t.insert(Slot::Run {
                    progress: Box::new(progress),
                    script,
                });
                w.uint(u64::from(id));
                w.buf.extend_from_slice(&body.buf);
                return Ok(());
            }
            Err(e) => {
                let exc = too_large(e)?;
                progress = resume_run(progress, Answer::Abort(exc), PrintWriter::Callback(print))
                    .map_err(Failure::Exception)?;
            }
        }
    }
}

/// The exception that aborts a pause whose description is over the size
/// cap; any other failure to describe it is returned as is.
fn too_large(e: Failure) -> Result<MontyException, Failure> {
    match e {
        Failure::Api(msg) if msg.starts_with(value::TOO_LARGE) => {
            Ok(MontyException::new(ExcType::MemoryError, Some(msg)))
        }
        other => Err(other),
    }
}

/// How the host answers a pause.
enum Answer {
    Value(MontyObject),
    Raise(MontyException),
    Pending,
    NotFound,
    Futures(Vec<(u32, ExtFunctionResult)>),
    Abort(MontyException),
}

/// `type, message`: an exception class the sandbox does not know is raised
/// as `RuntimeError("Type: message")`, so no host answer is lost.
fn read_exception(r: &mut Reader<'_>) -> Result<MontyException, Failure> {
    let name = r.text()?;
    let msg = r.opt_text()?;
    Ok(match name.parse::<ExcType>() {
        Ok(exc_type) => MontyException::new(exc_type, msg.map(str::to_owned)),
        Err(_) => MontyException::new(
            ExcType::RuntimeError,
            Some(match msg {
                Some(m) => format!("{name}: {m}"),
                None => name.to_owned(),
            }),
        ),
    })
}

impl Answer {
    /// `[mode, ...]`: `[0, value]`, `[1, type, msg]`, `[2]`, `[3]`,
    /// `[4, [call_id, ok, value | type, msg]...]`, `[5, type, msg]`.
    fn read(r: &mut Reader<'_>) -> Result<Self, Failure> {
        let n = r.array()?;
        let mode = r.uint()?;
        let answer = match (mode, n) {
            (0, 2) => Self::Value(value::decode(r)?),
            (1, 3) => Self::Raise(read_exception(r)?),
            (2, 1) => Self::Pending,
            (3, 1) => Self::NotFound,
            (4, 2) => {
                let count = r.array()?;
                let mut results = Vec::with_capacity(count);
                for _ in 0..count {
                    let len = r.array()?;
                    let id = r.u32()?;
                    let ok = r.bool()?;
                    let result = match (ok, len) {
                        (true, 3) => ExtFunctionResult::Return(value::decode(r)?),
                        (false, 4) => ExtFunctionResult::Error(read_exception(r)?),
                        _ => return Err(Failure::Api("malformed future result".into())),
                    };
                    results.push((id, result));
                }
                Self::Futures(results)
            }
            (5, 3) => Self::Abort(read_exception(r)?),
            _ => return Err(Failure::Api(format!("malformed resume answer (mode {mode})"))),
        };
        Ok(answer)
    }

    fn ext(self, call_id: u32, name: &str) -> Result<ExtFunctionResult, Failure> {
        match self {
            Self::Value(v) => Ok(ExtFunctionResult::Return(v)),
            Self::Raise(e) => Ok(ExtFunctionResult::Error(e)),
            Self::Pending => Ok(ExtFunctionResult::Future(call_id)),
            Self::NotFound => Ok(ExtFunctionResult::NotFound(name.to_owned())),
            Self::Futures(_) | Self::Abort(_) => Err(Failure::Api("this pause is not answered with futures".into())),
        }
    }

    fn lookup(self) -> Result<NameLookupResult, Failure> {
        match self {
            Self::Value(v) => Ok(NameLookupResult::Value(v)),
            Self::Raise(e) => Ok(NameLookupResult::Error(e)),
            Self::NotFound => Ok(NameLookupResult::Undefined),
            _ => Err(Failure::Api(
                "a name lookup is answered with a value, an exception or undefined".into(),
            )),
        }
    }
}

/// `[limits | null, answer]` → `[handle, progress]` for runs, `progress` for REPLs.
fn resume(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &mut Table, print: &mut HostPrint) -> OpResult {
    r.array_of(2)?;
    let line_buffered = if r.null()? {
        false
    } else {
        // Limits on resume change print buffering and the caps; budgets stay
        // as started.
        let limits = Limits::read(r)?;
        limits.apply_caps();
        limits.line_buffered
    };
    *print = HostPrint::new(line_buffered);
    let answer = Answer::read(r)?;
    match t.slots.remove(&handle) {
        Some(Slot::Run { progress, script }) => {
            let next = resume_run(*progress, answer, PrintWriter::Callback(print)).map_err(Failure::Exception)?;
            finish_run(next, script, w, t, print)
        }
        Some(Slot::Repl {
            repl: Repl::Paused(progress),
            script,
        }) => {
            let result = resume_repl(*progress, answer, PrintWriter::Callback(print));
            finish_repl(handle, result, script, w, t, print)
        }
        Some(other) => {
            t.slots.insert(handle, other);
            Err(wrong_kind(handle, "a paused run or REPL"))
        }
        None => Err(no_handle(handle)),
    }
}

fn resume_run(progress: RunProgress, answer: Answer, print: PrintWriter<'_>) -> Result<RunProgress, MontyException> {
    if let Answer::Abort(exc) = answer {
        return match progress {
            RunProgress::FunctionCall(c) => c.abort(exc, print),
            RunProgress::OsCall(c) => c.abort(exc, print),
            RunProgress::NameLookup(c) => c.abort(exc, print),
            RunProgress::ResolveFutures(c) => c.abort(exc, print),
            RunProgress::Complete(_) => Err(exc),
        };
    }
    let misuse = |m: Failure| match m {
        Failure::Api(s) => MontyException::new(ExcType::RuntimeError, Some(format!("host error: {s}"))),
        Failure::Exception(e) => e,
    };
    match progress {
        RunProgress::FunctionCall(c) => {
            let res = answer.ext(c.call_id, &c.function_name).map_err(misuse)?;
            c.resume(res, print)
        }
        RunProgress::OsCall(c) => {
            let res = answer.ext(c.call_id, c.function_call.name()).map_err(misuse)?;
            c.resume(res, print)
        }
        RunProgress::NameLookup(c) => {
            let res = answer.lookup().map_err(misuse)?;
            c.resume(res, print)
        }
        RunProgress::ResolveFutures(c) => match answer {
            Answer::Futures(results) => c.resume(results, print),
            _ => Err(misuse(Failure::Api(
                "waiting on futures: answer with future results".into(),
            ))),
        },
        RunProgress::Complete(v) => Ok(RunProgress::Complete(v)),
    }
}

type ReplResult = Result<ReplProgress, Box<ReplStartError>>;

fn resume_repl(progress: ReplProgress, answer: Answer, print: PrintWriter<'_>) -> ReplResult {
    if let Answer::Abort(exc) = answer {
        return match progress {
            ReplProgress::FunctionCall(c) => c.abort(exc, print),
            ReplProgress::OsCall(c) => c.abort(exc, print),
            ReplProgress::NameLookup(c) => c.abort(exc, print),
            ReplProgress::ResolveFutures(c) => c.abort(exc, print),
            ReplProgress::Complete { repl, .. } => Err(Box::new(ReplStartError { repl, error: exc })),
        };
    }
    let misuse = |m: Failure| match m {
        Failure::Api(s) => MontyException::new(ExcType::RuntimeError, Some(format!("host error: {s}"))),
        Failure::Exception(e) => e,
    };
    match progress {
        ReplProgress::FunctionCall(c) => match answer.ext(c.call_id, &c.function_name) {
            Ok(res) => c.resume(res, print),
            Err(m) => c.abort(misuse(m), print),
        },
        ReplProgress::OsCall(c) => match answer.ext(c.call_id, c.function_call.name()) {
            Ok(res) => c.resume(res, print),
            Err(m) => c.abort(misuse(m), print),
        },
        ReplProgress::NameLookup(c) => match answer.lookup() {
            Ok(res) => c.resume(res, print),
            Err(m) => c.abort(misuse(m), print),
        },
        ReplProgress::ResolveFutures(c) => match answer {
            Answer::Futures(results) => c.resume(results, print),
            _ => c.abort(
                misuse(Failure::Api("waiting on futures: answer with future results".into())),
                print,
            ),
        },
        done @ ReplProgress::Complete { .. } => Ok(done),
    }
}

/// Stores the REPL back under `handle` (idle or paused) and writes the
/// progress. A pause whose call arguments are over the size cap is aborted
/// at once with `MemoryError`, so the REPL never stays paused on it.
fn finish_repl(
    handle: u32,
    mut result: ReplResult,
    script: String,
    w: &mut Writer,
    t: &mut Table,
    print: &mut HostPrint,
) -> OpResult {
    loop {
        let progress = match result {
            Ok(ReplProgress::Complete { repl, value }) => {
                t.slots.insert(
                    handle,
                    Slot::Repl {
                        repl: Repl::Idle(Box::new(repl)),
                        script,
                    },
                );
                w.array(2);
                w.uint(0);
                value::encode(w, &value)?;
                return Ok(());
            }
            Err(err) => {
                let ReplStartError { repl, error } = *err;
                t.slots.insert(
                    handle,
                    Slot::Repl {
                        repl: Repl::Idle(Box::new(repl)),
                        script,
                    },
                );
                return Err(Failure::Exception(error));
            }
            Ok(progress) => progress,
        };
        let mut body = Writer::default();
        // Arguments over the size cap abort the pause (`Err(Ok(exc))`).
        match write_repl_progress(&mut body, &progress).map_err(too_large) {
            Err(Ok(exc)) => result = resume_repl(progress, Answer::Abort(exc), PrintWriter::Callback(print)),
            described => {
                t.slots.insert(
                    handle,
                    Slot::Repl {
                        repl: Repl::Paused(Box::new(progress)),
                        script,
                    },
                );
                if let Err(Err(failure)) = described {
                    return Err(failure);
                }
                w.buf.extend_from_slice(&body.buf);
                return Ok(());
            }
        }
    }
}

/// `[script_name, host_clock, sandbox?]` → handle
fn repl_new(r: &mut Reader<'_>, w: &mut Writer, t: &mut Table) -> OpResult {
    let items = request_array(r, 2)?;
    let script = r.text()?.to_owned();
    let host_clock = r.bool()?;
    let mut sandbox = Sandbox::read(r, items, 2)?;
    let mut repl =
        MontyRepl::new(&script, ResourceTracker::default(), sandbox.options).with_os_policy(sandbox.policy(host_clock));
    if let Some(cwd) = &sandbox.cwd {
        repl.set_cwd(cwd);
    }
    w.uint(u64::from(t.insert(Slot::Repl {
        repl: Repl::Idle(Box::new(repl)),
        script,
    })));
    Ok(())
}

/// `[code, [name, value, ...], limits]` → progress
fn feed(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &mut Table, print: &mut HostPrint) -> OpResult {
    r.array_of(3)?;
    let code = r.text()?;
    let inputs = value::decode_named(r)?;
    let limits = Limits::read(r)?;
    *print = HostPrint::new(limits.line_buffered);
    let (mut repl, script) = match t.slots.remove(&handle) {
        Some(Slot::Repl {
            repl: Repl::Idle(repl),
            script,
        }) => (repl, script),
        Some(other) => {
            let busy = matches!(other, Slot::Repl { .. });
            t.slots.insert(handle, other);
            return Err(if busy {
                Failure::Api(format!("REPL {handle} is paused: resume it before feeding more code"))
            } else {
                wrong_kind(handle, "a REPL")
            });
        }
        None => return Err(no_handle(handle)),
    };
    *repl.tracker_mut() = limits.tracker();
    let result = (*repl).feed_start(code, inputs, PrintWriter::Callback(print));
    finish_repl(handle, result, script, w, t, print)
}

/// `[max_memory?]` (or no request) → `[kind, bytes]`. Serialising holds the
/// heap, the dump and the response at once: with the session's memory limit
/// the hard ceiling is armed for that (four times the limit), since a dump
/// is bounded by the heap it copies; the response is written at its exact
/// size.
fn dump_op(handle: u32, r: &mut Reader<'_>, w: &mut Writer, t: &Table) -> OpResult {
    if r.array_of(1).is_ok() {
        let memory = r.opt_uint()?.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
        // Errors only when the allocator is not installed, which it is.
        let _ = monty_alloc::set_hard_limit(memory.map(|m| m.saturating_mul(4).saturating_add(HARD_LIMIT_HEADROOM)));
    }
    let dump_err = |e: monty::DumpEncodeError| Failure::Api(format!("dump failed: {e:?}"));
    let (kind, bytes) = match t.slots.get(&handle) {
        Some(Slot::Program { run, .. }) => (
            KIND_PROGRAM,
            postcard::to_allocvec(run).map_err(|e| Failure::Api(format!("dump failed: {e}")))?,
        ),
        Some(Slot::Run { progress, script }) => (
            KIND_RUN,
            dump(script, None, &[], SessionRef::Running(progress)).map_err(dump_err)?,
        ),
        Some(Slot::Repl { repl, script }) => {
            let state = match repl {
                Repl::Idle(r) => SessionRef::Idle(r),
                Repl::Paused(p) => SessionRef::Suspended(p),
            };
            (KIND_REPL, dump(script, None, &[], state).map_err(dump_err)?)
        }
        None => return Err(no_handle(handle)),
    };
    w.buf.reserve_exact(bytes.len() + 32);
    w.array(2);
    w.uint(kind);
    w.bytes(&bytes);
    Ok(())
}

/// `[kind, bytes, memory?]` → `[handle, kind, progress | null]`. With a
/// memory limit, the allocator's hard ceiling for it is armed first, so a
/// dump that expands past it ends the instance instead of the host's memory.
fn load(r: &mut Reader<'_>, w: &mut Writer, t: &mut Table) -> OpResult {
    let n = r.array()?;
    if n != 2 && n != 3 {
        return Err(Failure::Api("bad request: array has the wrong length".to_owned()));
    }
    let kind = r.uint()?;
    let bytes = r.bytes()?;
    if n == 3 {
        let memory = r.opt_uint()?.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
        arm_hard_limit(memory);
    }
    let slot = if kind == KIND_PROGRAM {
        let run: MontyRun =
            postcard::from_bytes(bytes).map_err(|e| Failure::Api(format!("not a compiled program: {e}")))?;
        Slot::Program {
            run: Box::new(run),
            script: String::new(),
        }
    } else {
        let loaded = Dump::load(bytes).map_err(|e| Failure::Api(format!("cannot load state: {e:?}")))?;
        let script = loaded.script_name;
        match (kind, loaded.state) {
            (KIND_RUN, Session::Running(progress)) => Slot::Run { progress, script },
            (KIND_REPL, Session::Idle(repl)) => Slot::Repl {
                repl: Repl::Idle(repl),
                script,
            },
            (KIND_REPL, Session::Suspended(progress)) => Slot::Repl {
                repl: Repl::Paused(progress),
                script,
            },
            _ => return Err(Failure::Api("state is not of the requested kind".into())),
        }
    };
    let mut body = Writer::default();
    match &slot {
        Slot::Program { .. }
        | Slot::Repl {
            repl: Repl::Idle(_), ..
        } => body.null(),
        Slot::Run { progress, .. } => write_run_progress(&mut body, progress)?,
        Slot::Repl {
            repl: Repl::Paused(p), ..
        } => write_repl_progress(&mut body, p)?,
    }
    let id = t.insert(slot);
    w.array(3);
    w.uint(u64::from(id));
    w.uint(kind);
    w.buf.extend_from_slice(&body.buf);
    Ok(())
}

fn opt_uuid(w: &mut Writer, id: Option<MontyUuid>) {
    match id {
        Some(id) => w.bytes(id.as_bytes()),
        None => w.null(),
    }
}

fn write_os_call(w: &mut Writer, call: &OsFunctionCall, call_id: u32, eager: bool) -> Result<(), Failure> {
    w.array(5);
    w.uint(3);
    w.text(call.name());
    value::encode_call_args(w, &call.clone().to_args())?;
    w.uint(u64::from(call_id));
    w.bool(eager);
    Ok(())
}

fn write_futures(w: &mut Writer, ids: &[u32]) -> Result<(), Failure> {
    w.array(2);
    w.uint(4);
    w.array(ids.len());
    for id in ids {
        w.uint(u64::from(*id));
    }
    Ok(())
}

/// Progress: `[0, value]`, `[1, name, args, kwargs, call_id, object_id, eager]`,
/// `[2, name, object_id]`, `[3, name, args, kwargs, call_id, eager]`, `[4, [ids]]`.
fn write_run_progress(w: &mut Writer, p: &RunProgress) -> Result<(), Failure> {
    match p {
        RunProgress::Complete(v) => write_complete(w, v),
        RunProgress::FunctionCall(c) => write_call(
            w,
            &c.function_name,
            &c.args,
            c.call_id,
            c.object_id,
            c.allow_eager_await,
        ),
        RunProgress::NameLookup(c) => write_lookup(w, &c.name, c.object_id()),
        RunProgress::OsCall(c) => write_os_call(w, &c.function_call, c.call_id, c.allow_eager_await),
        RunProgress::ResolveFutures(c) => write_futures(w, c.pending_call_ids()),
    }
}

/// The same progress items for a REPL feed.
fn write_repl_progress(w: &mut Writer, p: &ReplProgress) -> Result<(), Failure> {
    match p {
        ReplProgress::Complete { value: v, .. } => write_complete(w, v),
        ReplProgress::FunctionCall(c) => write_call(
            w,
            &c.function_name,
            &c.args,
            c.call_id,
            c.object_id,
            c.allow_eager_await,
        ),
        ReplProgress::NameLookup(c) => write_lookup(w, &c.name, c.object_id()),
        ReplProgress::OsCall(c) => write_os_call(w, &c.function_call, c.call_id, c.allow_eager_await),
        ReplProgress::ResolveFutures(c) => write_futures(w, c.pending_call_ids()),
    }
}

fn write_complete(w: &mut Writer, v: &MontyObject) -> Result<(), Failure> {
    w.array(2);
    w.uint(0);
    value::encode(w, v)?;
    Ok(())
}

fn write_call(
    w: &mut Writer,
    name: &str,
    args: &CallArgs,
    call_id: u32,
    object_id: Option<MontyUuid>,
    eager: bool,
) -> Result<(), Failure> {
    w.array(7);
    w.uint(1);
    w.text(name);
    value::encode_call_args(w, args)?;
    w.uint(u64::from(call_id));
    opt_uuid(w, object_id);
    w.bool(eager);
    Ok(())
}

fn write_lookup(w: &mut Writer, name: &str, object_id: Option<MontyUuid>) -> Result<(), Failure> {
    w.array(3);
    w.uint(2);
    w.text(name);
    opt_uuid(w, object_id);
    Ok(())
}

/// `[type, message | null, [[file, line, col, end_line, end_col, name | null, preview | null]...], text, limit]`
fn write_exception(w: &mut Writer, exc: &MontyException, print_limit_hit: bool) {
    let name: &'static str = exc.exc_type().into();
    let msg = exc.message().unwrap_or_default();
    let limit = match exc.exc_type() {
        ExcType::MemoryError if print_limit_hit && msg == "print output limit exceeded" => LIMIT_OUTPUT,
        ExcType::TimeoutError if msg.contains("time limit exceeded") => LIMIT_TIME,
        ExcType::MemoryError if msg.starts_with("memory limit exceeded") => LIMIT_MEMORY,
        ExcType::RecursionError if msg.starts_with("maximum recursion depth exceeded") => LIMIT_RECURSION,
        ExcType::OverflowError if msg.starts_with("integer result too large") => LIMIT_INT_SIZE,
        ExcType::MemoryError if msg.starts_with(value::TOO_LARGE) => LIMIT_RESULT,
        _ => LIMIT_NONE,
    };
    w.array(5);
    w.text(name);
    w.opt_text(exc.message().map(|m| clip(m, MAX_EXCEPTION_TEXT)).as_deref());
    let frames = exc.traceback();
    w.array(frames.len());
    for f in frames {
        w.array(7);
        w.text(&f.filename);
        w.uint(u64::from(f.start.line));
        w.uint(u64::from(f.start.column));
        w.uint(u64::from(f.end.line));
        w.uint(u64::from(f.end.column));
        w.opt_text(f.frame_name.as_deref());
        w.opt_text(f.preview_line.as_deref());
    }
    w.text(&clip_middle(&exc.to_string(), MAX_EXCEPTION_TEXT));
    w.uint(limit);
}

/// Most bytes of an exception's message, and of its formatted traceback,
/// that leave the guest: `raise Exception('x' * 10**8)` must not copy a
/// hundred megabytes into the host.
const MAX_EXCEPTION_TEXT: usize = 64 << 10;

/// The largest character boundary of `s` at or below `at`.
fn boundary_below(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `s` cut to `max` bytes at a character boundary, saying how much was cut.
fn clip(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let end = boundary_below(s, max);
    Cow::Owned(format!("{}… [{} more bytes]", &s[..end], s.len() - end))
}

/// `s` with its middle cut out to fit `max` bytes: a traceback keeps its
/// first frames and its last line (the exception).
fn clip_middle(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let head = boundary_below(s, max / 2);
    let mut tail = s.len() - max / 2;
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    Cow::Owned(format!(
        "{}\n… [{} bytes cut] …\n{}",
        &s[..head],
        tail - head,
        &s[tail..]
    ))
}
