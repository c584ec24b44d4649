//! monty-go's type-checker module: a wasm32-wasip1 reactor over the
//! `monty-type-checking` crate (ty's analysis against the typeshed subset
//! Monty implements), kept apart from the interpreter module so that
//! processes that never check do not load it.
//!
//! The protocol mirrors the interpreter's: the host writes a CBOR request
//! into the buffer `checker_reserve` returns, calls `checker_call(op, len)`
//! and reads the CBOR response from the packed pointer/length it returns.
//! The buffers, the counting allocator (a check past its memory budget ends
//! the instance with exit code 65) and the codec are the `abi` crate's
//! (`wasm/abi/`), shared with the interpreter. `docs/abi.md` in the
//! repository describes both modules.

mod check;

/// Version of the request/response protocol; the host refuses a module
/// whose version differs from its own.
pub const ABI_VERSION: u32 = 1;

/// The protocol version this module speaks.
#[unsafe(no_mangle)]
pub extern "C" fn checker_abi_version() -> u32 {
    ABI_VERSION
}

/// Makes the request buffer hold at least `len` bytes and returns its address.
#[unsafe(no_mangle)]
pub extern "C" fn checker_reserve(len: u32) -> u32 {
    abi::reserve(len)
}

/// Runs operation `op` with the first `len` request bytes.
/// Returns `(pointer << 32) | length` of the response.
#[unsafe(no_mangle)]
pub extern "C" fn checker_call(op: u32, len: u32) -> u64 {
    abi::call(len, |body| check::dispatch(op, body))
}
