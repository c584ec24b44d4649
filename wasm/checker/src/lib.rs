//! monty-go's type-checker module: a wasm32-wasip1 reactor over the
//! `monty-type-checking` crate (ty's analysis against the typeshed subset
//! Monty implements), kept apart from the interpreter module so that
//! processes that never check do not load it.
//!
//! The protocol mirrors the interpreter's: the host writes a CBOR request
//! into the buffer `checker_reserve` returns, calls `checker_call(op, len)`
//! and reads the CBOR response from the packed pointer/length it returns.
//! `docs/abi.md` in the repository describes both modules.

#[allow(dead_code, reason = "the interpreter shim's codec; the checker uses part of it")]
#[path = "../../src/cbor.rs"]
mod cbor;
mod check;

use std::{
    cell::RefCell,
    sync::atomic::{AtomicBool, Ordering},
};

use monty_alloc::LimitedAllocator;

/// Counts live bytes so a check's memory budget is enforced; a check past it
/// ends the instance with exit code 65.
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
pub extern "C" fn checker_abi_version() -> u32 {
    ABI_VERSION
}

/// Fixes the allocator's baseline before anything else exists, so that the
/// typeshed and lint registry the first checker builds are added to it
/// (`allocate_into_baseline`) and every check is charged only for itself.
fn arm_baseline() {
    static ARMED: AtomicBool = AtomicBool::new(false);
    if !ARMED.load(Ordering::Relaxed) {
        // monty-alloc refuses to arm before its first allocation.
        let probe = std::hint::black_box(Box::new(0u8));
        if monty_alloc::set_hard_limit(None).is_ok() {
            ARMED.store(true, Ordering::Relaxed);
        }
        drop(probe);
    }
}

/// Makes the request buffer hold at least `len` bytes and returns its address.
#[unsafe(no_mangle)]
pub extern "C" fn checker_reserve(len: u32) -> u32 {
    arm_baseline();
    REQUEST.with_borrow_mut(|buf| {
        let len = len as usize;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf.as_mut_ptr() as u32
    })
}

/// Runs operation `op` with the first `len` request bytes.
/// Returns `(pointer << 32) | length` of the response.
#[unsafe(no_mangle)]
pub extern "C" fn checker_call(op: u32, len: u32) -> u64 {
    arm_baseline();
    let request = REQUEST.with_borrow_mut(std::mem::take);
    let body = request.get(..len as usize).unwrap_or_default();
    let response = check::dispatch(op, body);
    REQUEST.with_borrow_mut(|buf| *buf = request);
    RESPONSE.with_borrow_mut(|buf| {
        *buf = response;
        (u64::from(buf.as_ptr() as u32) << 32) | buf.len() as u64
    })
}
