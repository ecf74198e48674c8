//! The warden's roll as flakelab writes it: the in-memory file mapped
//! shared into our memory, so that putting a run on the roll, naming its
//! process group and taking it off are stores to memory, not system calls
//! (three `pwrite`s a run before). The warden reads the same pages through
//! its own descriptor once flakelab is gone.
//!
//! A store can be cut short only between two instructions, and a SIGKILL
//! lands on such a boundary: so each change ends with one store that makes
//! it count. A slot's marker and length are written before its held flag
//! is set (with release ordering), a process group is one aligned 4-byte
//! store, and freeing a slot is one byte. A flakelab killed half way through
//! a change leaves a slot that is either not held or held with what the
//! last whole change wrote, as whole `pwrite`s did.

#![expect(
    unsafe_code,
    reason = "a shared mapping of the roll: stores through raw pointers into pages only this module hands out"
)]

use std::fs::File;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

/// Bytes per slot: a power of two, so no slot crosses a page.
pub(super) const SLOT: usize = 256;
/// Where a slot's fields start: held flag, marker length, process group
/// (aligned, so one store writes it), marker.
pub(super) const HELD: usize = 0;
pub(super) const LEN: usize = 1;
pub(super) const PGID: usize = 4;
pub(super) const MARKER: usize = 8;
/// The longest marker a slot holds.
pub(super) const MARKER_MAX: usize = SLOT - MARKER;
/// Slots the mapping has room for: 1 MiB of address space, of which only
/// the pages the file has grown to exist (a page holds 16 slots).
/// `config::MAX_JOBS` is kept at most this: a session never has more runs
/// in flight than the roll holds.
pub(super) const SLOTS_MAX: usize = 4096;
const PAGE: usize = 4096;

/// The roll, mapped.
pub(super) struct RollMap {
    file: File,
    base: NonNull<u8>,
    /// The file's size: the pages that may be touched.
    size: usize,
}

// SAFETY: the mapping is owned by this value alone (no copy of `base`
// escapes), so moving it to another thread moves sole access with it.
unsafe impl Send for RollMap {}

impl RollMap {
    /// Maps `file` (an empty in-memory file that only the warden reads
    /// besides us).
    pub(super) fn new(file: File) -> Result<Self, String> {
        let length = NonZeroUsize::new(SLOTS_MAX * SLOT).expect("non-zero");
        // SAFETY: a new mapping at an address the kernel picks; nothing else
        // in this process refers to that range.
        let base = unsafe {
            mmap(
                None,
                length,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &file,
                0,
            )
        }
        .map_err(|e| format!("cannot map the warden's roll (mmap): {e}"))?;
        Ok(RollMap {
            file,
            base: base.cast(),
            size: 0,
        })
    }

    /// The file, for the warden's own descriptor.
    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Grows the file to hold slot `index` (whole pages, zero-filled).
    fn reach(&mut self, index: usize) -> Result<(), String> {
        if index >= SLOTS_MAX {
            return Err(format!(
                "more than {SLOTS_MAX} runs at once: the warden's roll is full"
            ));
        }
        let end = (index + 1) * SLOT;
        if end > self.size {
            let size = end.div_ceil(PAGE) * PAGE;
            self.file
                .set_len(size as u64)
                .map_err(|e| format!("the warden's roll cannot grow: {e}"))?;
            self.size = size;
        }
        Ok(())
    }

    /// A pointer to byte `field` of slot `index`, which [`reach`] covered.
    fn at(&self, index: usize, field: usize) -> *mut u8 {
        debug_assert!(index * SLOT + field < self.size);
        // SAFETY: inside the mapping (index < SLOTS_MAX, field < SLOT).
        unsafe { self.base.as_ptr().add(index * SLOT + field) }
    }

    fn held(&self, index: usize) -> &AtomicU8 {
        // SAFETY: an in-bounds byte of the mapping, accessed only atomically.
        unsafe { AtomicU8::from_ptr(self.at(index, HELD)) }
    }

    /// Holds slot `index` for `marker` (at most [`MARKER_MAX`] bytes), with
    /// no process group yet.
    pub(super) fn hold(&mut self, index: usize, marker: &[u8]) -> Result<(), String> {
        assert!(marker.len() <= MARKER_MAX, "checked by the caller");
        self.reach(index)?;
        // A slot is taken only while free: nothing reads it as held while
        // its fields change.
        self.held(index).store(0, Ordering::Release);
        self.set_group(index, 0);
        // SAFETY: in-bounds bytes of the mapping, not aliased by a reference.
        unsafe {
            self.at(index, LEN).write_volatile(marker.len() as u8);
            std::ptr::copy_nonoverlapping(marker.as_ptr(), self.at(index, MARKER), marker.len());
        }
        self.held(index).store(1, Ordering::Release);
        Ok(())
    }

    /// Names the process group of the run in slot `index`.
    pub(super) fn set_group(&self, index: usize, pgid: i32) {
        // SAFETY: PGID is 4-aligned in a page-aligned mapping, in bounds
        // (the slot was reached when held), and accessed only atomically.
        let group = unsafe { AtomicU32::from_ptr(self.at(index, PGID).cast::<u32>()) };
        group.store(u32::from_ne_bytes(pgid.to_le_bytes()), Ordering::Release);
    }

    /// Frees slot `index`.
    pub(super) fn free(&self, index: usize) {
        self.held(index).store(0, Ordering::Release);
    }
}

impl Drop for RollMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used.
        let _ = unsafe { munmap(self.base.cast(), SLOTS_MAX * SLOT) };
    }
}
