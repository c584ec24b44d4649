//! `print()` output: buffered in the guest, handed to the host through the
//! `monty.print` import.

use std::borrow::Cow;

use monty_types::{ExcType, MontyException, PrintWriterCallback};

#[link(wasm_import_module = "monty")]
unsafe extern "C" {
    /// Delivers `len` bytes of UTF-8 text for `stream` (0 stdout, 1 stderr).
    /// Returns 0 to continue, 1 when the host's output limit is reached.
    #[link_name = "print"]
    fn host_print(stream: u32, ptr: *const u8, len: u32) -> u32;
}

/// Bytes buffered before a flush is forced.
const FLUSH_AT: usize = 8 * 1024;

/// A print writer that batches fragments and flushes them to the host at
/// newlines (when line buffered), when the buffer fills, on the VM's
/// periodic poll and at the end of every call.
pub struct HostPrint {
    buf: String,
    stream: u32,
    line_buffered: bool,
    /// Set once the host reported its output limit.
    pub limit_hit: bool,
}

impl HostPrint {
    pub fn new(line_buffered: bool) -> Self {
        Self {
            buf: String::new(),
            stream: 0,
            line_buffered,
            limit_hit: false,
        }
    }

    fn limit_error() -> MontyException {
        MontyException::new(ExcType::MemoryError, Some("print output limit exceeded".to_owned()))
    }

    /// Sends what is buffered to the host.
    pub fn flush(&mut self) -> Result<(), MontyException> {
        if self.buf.is_empty() {
            return Ok(());
        }
        // SAFETY: the pointer and length describe `self.buf`, which is live
        // and unmodified for the duration of the call; the host only reads.
        let status = unsafe { host_print(self.stream, self.buf.as_ptr(), self.buf.len() as u32) };
        self.buf.clear();
        if status != 0 {
            self.limit_hit = true;
            return Err(Self::limit_error());
        }
        Ok(())
    }

    fn switch(&mut self, stream: u32) -> Result<(), MontyException> {
        if self.limit_hit {
            return Err(Self::limit_error());
        }
        if stream != self.stream {
            self.flush()?;
            self.stream = stream;
        }
        Ok(())
    }

    fn write(&mut self, stream: u32, text: &str) -> Result<(), MontyException> {
        self.switch(stream)?;
        self.buf.push_str(text);
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn push(&mut self, stream: u32, c: char) -> Result<(), MontyException> {
        self.switch(stream)?;
        self.buf.push(c);
        if (c == '\n' && self.line_buffered) || self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }
}

impl PrintWriterCallback for HostPrint {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.write(0, &output)
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push(0, end)
    }

    fn stderr_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.write(1, &output)
    }

    fn stderr_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push(1, end)
    }

    fn poll_flush(&mut self) -> Result<(), MontyException> {
        self.flush()
    }
}
