//! monty-go's C-ABI shim: a wasm32-wasip1 reactor over the `monty` crate.
//!
//! The host writes a CBOR request into the buffer returned by
//! `monty_reserve`, calls `monty_call(op, handle, len)` and reads the CBOR
//! response from the packed pointer/length it returns (valid until the next
//! call). Handles index compiled programs, paused runs and REPLs kept in this
//! instance. `docs/abi.md` in the repository is the full description.

mod cbor;
mod ops;
mod print;
mod value;

use std::{
    cell::RefCell,
    sync::atomic::{AtomicBool, Ordering},
};

use monty_alloc::LimitedAllocator;

/// Counts live bytes so `max_memory` is enforced.
#[global_allocator]
static ALLOCATOR: LimitedAllocator = LimitedAllocator;

/// Version of the request/response protocol; the host refuses a module
/// whose version differs from its own.
pub const ABI_VERSION: u32 = 1;

thread_local! {
    static REQUEST: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static RESPONSE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The protocol version this module speaks.
#[unsafe(no_mangle)]
pub extern "C" fn monty_abi_version() -> u32 {
    ABI_VERSION
}

/// Fixes the allocator's baseline (what `max_memory` does not count) at the
/// instance's leanest moment, before any request, program or state exists,
/// so everything that arrives later counts: above all the heap of a REPL
/// loaded from a dump. Monty arms it lazily at the first limited run, which
/// would take a heap loaded before that run into the baseline.
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
#[unsafe(no_mangle)]
pub extern "C" fn monty_reserve(len: u32) -> u32 {
    arm_baseline();
    REQUEST.with_borrow_mut(|buf| {
        let len = len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf.as_mut_ptr() as u32
    })
}

/// Runs operation `op` on `handle` with the first `len` request bytes.
/// Returns `(pointer << 32) | length` of the response.
#[unsafe(no_mangle)]
pub extern "C" fn monty_call(op: u32, handle: u32, len: u32) -> u64 {
    arm_baseline();
    let request = REQUEST.with_borrow_mut(std::mem::take);
    let body = request.get(..len as usize).unwrap_or_default();
    let response = ops::dispatch(op, handle, body);
    REQUEST.with_borrow_mut(|buf| *buf = request);
    RESPONSE.with_borrow_mut(|buf| {
        *buf = response;
        (u64::from(buf.as_ptr() as u32) << 32) | buf.len() as u64
    })
}

/// Releases the response buffer's memory (it is otherwise kept for reuse).
#[unsafe(no_mangle)]
pub extern "C" fn monty_release() {
    RESPONSE.with_borrow_mut(|buf| *buf = Vec::new());
    REQUEST.with_borrow_mut(|buf| *buf = Vec::new());
}
