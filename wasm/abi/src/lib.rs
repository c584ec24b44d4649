//! What monty-go's two wasm32-wasip1 reactors share: the interpreter
//! (`wasm/`, exports `monty_*`) and the type checker (`wasm/checker/`,
//! exports `checker_*`) are called the same way.
//!
//! The host writes a CBOR request into the buffer that [`reserve`] returns
//! and calls the module, which passes the request to its operations through
//! [`call`] and hands back the packed pointer/length of the CBOR response,
//! valid until the next call. Each module exports its own thin C functions
//! over these, and installs through this crate `monty_alloc`'s counting
//! allocator, so that its memory limits are real. [`cbor`] is the codec of
//! both. `docs/abi.md` in the repository is the full description.

pub mod cbor;

use std::{
    cell::RefCell,
    sync::atomic::{AtomicBool, Ordering},
};

use monty_alloc::LimitedAllocator;

/// Counts live bytes, so that a memory limit (the interpreter's
/// `max_memory`, a check's budget) is enforced. With monty-alloc's
/// `exit-code` feature, which the checker turns on, an allocation past the
/// limit ends the instance with exit code 65.
#[global_allocator]
static ALLOCATOR: LimitedAllocator = LimitedAllocator;

thread_local! {
    static REQUEST: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static RESPONSE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Fixes the allocator's baseline (what a memory limit does not count) at
/// the instance's leanest moment, before any request, program or state
/// exists, so that everything arriving later counts: above all the heap of
/// a REPL the interpreter loads from a dump (monty arms the baseline lazily
/// at the first limited run, which would take such a heap into it). The
/// checker adds the typeshed and lint registry its first checker builds to
/// the baseline (`allocate_into_baseline`), so every check is charged only
/// for itself.
fn arm_baseline() {
    static ARMED: AtomicBool = AtomicBool::new(false);
    if !ARMED.load(Ordering::Relaxed) {
        // monty-alloc refuses to arm before its first allocation, which a
        // fresh instance may not have made yet: make one.
        let probe = std::hint::black_box(Box::new(0u8));
        if monty_alloc::set_hard_limit(None).is_ok() {
            ARMED.store(true, Ordering::Relaxed);
        }
        drop(probe);
    }
}

/// Makes the request buffer hold at least `len` bytes and returns its address.
pub fn reserve(len: u32) -> u32 {
    arm_baseline();
    REQUEST.with_borrow_mut(|buf| {
        let len = len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf.as_mut_ptr() as u32
    })
}

/// Runs `operation` on the first `len` request bytes and keeps its response
/// until the next call. Returns `(pointer << 32) | length` of the response.
pub fn call(len: u32, operation: impl FnOnce(&[u8]) -> Vec<u8>) -> u64 {
    arm_baseline();
    let request = REQUEST.with_borrow_mut(std::mem::take);
    let body = request.get(..len as usize).unwrap_or_default();
    let response = operation(body);
    REQUEST.with_borrow_mut(|buf| *buf = request);
    RESPONSE.with_borrow_mut(|buf| {
        *buf = response;
        (u64::from(buf.as_ptr() as u32) << 32) | buf.len() as u64
    })
}

/// Releases the memory of both buffers (it is otherwise kept for reuse).
pub fn release() {
    RESPONSE.with_borrow_mut(|buf| *buf = Vec::new());
    REQUEST.with_borrow_mut(|buf| *buf = Vec::new());
}
