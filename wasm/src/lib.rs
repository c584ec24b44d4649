//! monty-go's C-ABI shim: a wasm32-wasip1 reactor over the `monty` crate.
//!
//! The host writes a CBOR request into the buffer returned by
//! `monty_reserve`, calls `monty_call(op, handle, len)` and reads the CBOR
//! response from the packed pointer/length it returns (valid until the next
//! call). Handles index compiled programs, paused runs and REPLs kept in this
//! instance. The buffers, the counting allocator and the codec are the
//! `abi` crate's (`wasm/abi/`), shared with the type checker module.
//! `docs/abi.md` in the repository is the full description.

mod ops;
mod print;
mod value;

/// Version of the request/response protocol; the host refuses a module
/// whose version differs from its own.
pub const ABI_VERSION: u32 = 1;

/// The protocol version this module speaks.
#[unsafe(no_mangle)]
pub extern "C" fn monty_abi_version() -> u32 {
    ABI_VERSION
}

/// Makes the request buffer hold at least `len` bytes and returns its address.
#[unsafe(no_mangle)]
pub extern "C" fn monty_reserve(len: u32) -> u32 {
    abi::reserve(len)
}

/// Runs operation `op` on `handle` with the first `len` request bytes.
/// Returns `(pointer << 32) | length` of the response.
#[unsafe(no_mangle)]
pub extern "C" fn monty_call(op: u32, handle: u32, len: u32) -> u64 {
    abi::call(len, |body| ops::dispatch(op, handle, body))
}

/// Releases the memory of the request and response buffers (it is
/// otherwise kept for reuse).
#[unsafe(no_mangle)]
pub extern "C" fn monty_release() {
    abi::release()
}
