//! Page-aligned heap buffers.
//!
//! O_DIRECT transfers DMA straight from user memory, so Linux rejects
//! (EINVAL) a buffer whose address is not aligned to the device's logical
//! block size. A `Vec<u8>` gives no alignment guarantee, hence this type.

use std::alloc::{self, Layout};
use std::io;
use std::ptr::NonNull;

/// Alignment of every `AlignedBuf`: a memory page, which covers every
/// logical block size seen in practice (512 and 4096).
pub const BUFFER_ALIGN: usize = 4096;

/// A zero-initialised, `BUFFER_ALIGN`-aligned byte buffer, freed on drop.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is uniquely owned heap memory with no interior
// mutability; moving it to or sharing `&` of it with another thread is as
// safe as for a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: see above; `&AlignedBuf` only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes. Fails (instead of aborting the
    /// process, as `Vec` would) when `len` is zero or memory is short,
    /// because a backend must survive an absurd block size from SQL.
    pub fn new(len: usize) -> io::Result<AlignedBuf> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "aligned buffer length must be > 0",
            ));
        }
        let layout = Layout::from_size_align(len, BUFFER_ALIGN).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("aligned buffer length {len} is too large"),
            )
        })?;
        // SAFETY: the layout has a non-zero size (checked above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("cannot allocate an aligned buffer of {len} bytes"),
            )
        })?;
        Ok(AlignedBuf { ptr, layout })
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Always false (a zero length is refused at construction); present
    /// because a public `len` without it is a lint smell.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr points to len() initialised (zeroed) bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was returned by alloc_zeroed with this same layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_writable() {
        for len in [512, 4096, 8192, 4096 * 3 + 512, 1 << 20] {
            let mut buf = AlignedBuf::new(len).unwrap();
            assert_eq!(buf.len(), len);
            assert!(!buf.is_empty());
            assert_eq!(buf.as_slice().as_ptr() as usize % BUFFER_ALIGN, 0);
            assert!(buf.as_slice().iter().all(|&b| b == 0));
            buf.as_mut_slice()[len - 1] = 7;
            buf.as_mut_slice()[0] = 9;
            assert_eq!(buf.as_slice()[len - 1], 7);
            assert_eq!(buf.as_slice()[0], 9);
        }
    }

    #[test]
    fn zero_and_absurd_lengths_are_errors_not_aborts() {
        assert_eq!(
            AlignedBuf::new(0).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            AlignedBuf::new(usize::MAX - 10).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn buffers_can_move_to_other_threads() {
        let mut buf = AlignedBuf::new(4096).unwrap();
        buf.as_mut_slice()[100] = 42;
        let got = std::thread::spawn(move || buf.as_slice()[100])
            .join()
            .unwrap();
        assert_eq!(got, 42);
    }
}
