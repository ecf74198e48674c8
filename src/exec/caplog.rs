//! A run's output: the pipe its stdout and stderr share, the task that
//! reads it, and the log it goes to, capped to its head and tail.
//!
//! The cap itself ([`CapLog`], [`TailRing`]) is synchronous and tested on
//! its own; the reader only wires it to tokio.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::unistd::pipe2;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::launch::RUN_ID_VAR;

/// Size of the buffer the output pipe is read with.
const READ_BUF: usize = 64 * 1024;
/// How long to wait for the output pipe to close after the sweep.
pub(super) const DRAIN_BOUND: Duration = Duration::from_secs(2);

/// Creates the output pipe: the async read end and the write end (the
/// child's stdout and stderr). Both ends are close-on-exec, so a child
/// spawned concurrently by another run never inherits them; the spawn dup2s
/// the write end onto fds 1 and 2, which clears the flag there.
pub(super) fn output_pipe() -> io::Result<(ChildStdout, OwnedFd)> {
    let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
    // tokio's `net` feature (pipe::Receiver, AsyncFd) is not enabled; the
    // process feature can register any pipe read end through ChildStdout.
    // This sets O_NONBLOCK on the read end's open file description only.
    let read = ChildStdout::from_std(std::process::ChildStdout::from(read))?;
    Ok((read, write))
}

/// What the reader task hands back.
pub(super) struct Drained {
    summary: CapSummary,
    read_error: Option<String>,
}

/// Reads the output pipe to EOF (or until cancelled) into the capped log.
pub(super) async fn drain(
    mut pipe: ChildStdout,
    mut cap: CapLog<LazyFile>,
    mut cancelled: oneshot::Receiver<()>,
) -> Drained {
    // Read into spare capacity (`read_buf`): a zeroed 64 KiB buffer per
    // run was the largest single cost of a short run in the harness
    // (callgrind: about a fifth of its instructions per run of /bin/true).
    let mut buf = Vec::with_capacity(READ_BUF);
    let mut read_error = None;
    loop {
        buf.clear();
        tokio::select! {
            biased;
            _ = &mut cancelled => break,
            read = pipe.read_buf(&mut buf) => match read {
                Ok(0) => break,
                Ok(n) => cap.push(&buf[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    read_error = Some(err.to_string());
                    break;
                }
            },
        }
    }
    Drained {
        summary: cap.finish(),
        read_error,
    }
}

/// Waits (bounded) for the reader to see EOF; abandons the pipe if something
/// outside our reach still holds it open.
pub(super) async fn finish_drain(
    mut reader: JoinHandle<Drained>,
    cancel: oneshot::Sender<()>,
    warnings: &mut Vec<String>,
) -> Option<CapSummary> {
    let joined = match tokio::time::timeout(DRAIN_BOUND, &mut reader).await {
        Ok(joined) => joined,
        Err(_) => {
            warnings.push(format!(
                "the output pipe was still open {}s after the run was swept (a process outside \
                 the run's group without its {RUN_ID_VAR} holds it); stopped reading",
                DRAIN_BOUND.as_secs()
            ));
            let _ = cancel.send(());
            reader.await
        }
    };
    match joined {
        Ok(drained) => {
            if let Some(err) = drained.read_error {
                warnings.push(format!(
                    "reading the output failed: {err}; the rest was lost"
                ));
            }
            Some(drained.summary)
        }
        Err(err) => {
            warnings.push(format!("the output reader failed: {err}"));
            None
        }
    }
}

/// The line written between head and tail when bytes were dropped.
fn dropped_marker(dropped: u64) -> String {
    format!("\n[flakelab: {dropped} bytes dropped from the middle of the output]\n")
}

/// Totals of a capped log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CapSummary {
    /// Bytes pushed.
    pub(super) total: u64,
    /// Bytes beyond head + tail, left out of the log.
    pub(super) dropped: u64,
    /// The first write error, after which the sink was dropped.
    pub(super) failure: Option<String>,
}

/// A log file created on the first byte written: a run that prints nothing
/// costs no file (creating one is the largest fixed cost of a quiet run).
#[derive(Debug)]
pub(super) struct LazyFile {
    path: PathBuf,
    file: Option<File>,
}

impl LazyFile {
    pub(super) fn new(path: &Path) -> Self {
        LazyFile {
            path: path.to_path_buf(),
            file: None,
        }
    }
}

impl Write for LazyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(File::create(&self.path).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("cannot create the log {}: {err}", self.path.display()),
                )
            })?),
        };
        file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// A streaming head/tail cap: the first `head` bytes go straight to the sink,
/// the last `tail` bytes are kept in a ring and written by
/// [`CapLog::finish`], after a marker line when bytes were dropped. Memory is
/// bounded by `tail`. A write error drops the sink; counting goes on.
pub(super) struct CapLog<W: Write> {
    sink: Option<W>,
    head: u64,
    tail: u64,
    total: u64,
    ring: TailRing,
    failure: Option<String>,
}

impl<W: Write> CapLog<W> {
    pub(super) fn new(sink: Option<W>, head: usize, tail: usize) -> Self {
        // Without a sink the tail is never written, so it is not kept either.
        let ring_cap = if sink.is_some() { tail } else { 0 };
        CapLog {
            sink,
            head: head as u64,
            tail: tail as u64,
            total: 0,
            ring: TailRing::new(ring_cap),
            failure: None,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let head_room = self.head.saturating_sub(self.total);
        let split = usize::try_from(head_room).map_or(chunk.len(), |room| room.min(chunk.len()));
        self.total += chunk.len() as u64;
        let (head, rest) = chunk.split_at(split);
        if !head.is_empty() {
            self.write(head);
        }
        if !rest.is_empty() && self.sink.is_some() {
            self.ring.push(rest);
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(sink) = &mut self.sink {
            if let Err(err) = sink.write_all(bytes) {
                self.fail(err);
            }
        }
    }

    fn fail(&mut self, err: io::Error) {
        self.failure.get_or_insert_with(|| err.to_string());
        self.sink = None;
        self.ring = TailRing::new(0);
    }

    fn dropped(&self) -> u64 {
        self.total
            .saturating_sub(self.head.saturating_add(self.tail))
    }

    fn finish(mut self) -> CapSummary {
        let dropped = self.dropped();
        if self.sink.is_some() {
            if dropped > 0 {
                self.write(dropped_marker(dropped).as_bytes());
            }
            let ring = std::mem::replace(&mut self.ring, TailRing::new(0));
            let (older, newer) = ring.slices();
            self.write(older);
            self.write(newer);
            if let Some(sink) = &mut self.sink {
                if let Err(err) = sink.flush() {
                    self.fail(err);
                }
            }
        }
        CapSummary {
            total: self.total,
            dropped,
            failure: self.failure,
        }
    }
}

/// The last `cap` bytes pushed. Grows up to `cap`, then overwrites the oldest.
#[derive(Debug)]
struct TailRing {
    cap: usize,
    buf: Vec<u8>,
    /// Once full: index of the oldest byte (and of the next write).
    start: usize,
}

impl TailRing {
    fn new(cap: usize) -> Self {
        TailRing {
            cap,
            buf: Vec::new(),
            start: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        let cap = self.cap;
        if cap == 0 {
            return;
        }
        let mut data = &data[data.len().saturating_sub(cap)..];
        if self.buf.len() < cap {
            let n = (cap - self.buf.len()).min(data.len());
            if self.buf.capacity() < self.buf.len() + n {
                // Grow geometrically but never past `cap`.
                let want = (self.buf.capacity() * 2).max(self.buf.len() + n).min(cap);
                self.buf.reserve_exact(want - self.buf.len());
            }
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        while !data.is_empty() {
            let n = (cap - self.start).min(data.len());
            self.buf[self.start..self.start + n].copy_from_slice(&data[..n]);
            self.start = (self.start + n) % cap;
            data = &data[n..];
        }
    }

    /// The kept bytes, oldest first, in two pieces.
    fn slices(&self) -> (&[u8], &[u8]) {
        let (newer, older) = self.buf.split_at(self.start);
        (older, newer)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the log must hold for `all` under the cap.
    fn expected_log(all: &[u8], head: usize, tail: usize) -> Vec<u8> {
        if all.len() <= head + tail {
            return all.to_vec();
        }
        let dropped = (all.len() - head - tail) as u64;
        let mut log = all[..head].to_vec();
        log.extend_from_slice(dropped_marker(dropped).as_bytes());
        log.extend_from_slice(&all[all.len() - tail..]);
        log
    }

    fn cap_through(chunks: &[Vec<u8>], head: usize, tail: usize) -> (Vec<u8>, CapSummary) {
        let mut sink = Vec::new();
        let mut cap = CapLog::new(Some(&mut sink), head, tail);
        for chunk in chunks {
            cap.push(chunk);
        }
        let summary = cap.finish();
        (sink, summary)
    }

    #[test]
    fn cap_keeps_everything_that_fits() {
        let (log, summary) = cap_through(&[b"hello ".to_vec(), b"world".to_vec()], 4, 100);
        assert_eq!(log, b"hello world");
        assert_eq!(summary.total, 11);
        assert_eq!(summary.dropped, 0);
        assert_eq!(summary.failure, None);
    }

    #[test]
    fn cap_drops_the_middle_with_a_marker() {
        let (log, summary) = cap_through(&[b"0123456789".to_vec(), b"abcdef".to_vec()], 3, 4);
        assert_eq!(
            String::from_utf8(log).unwrap(),
            "012\n[flakelab: 9 bytes dropped from the middle of the output]\ncdef"
        );
        assert_eq!(summary.total, 16);
        assert_eq!(summary.dropped, 9);
    }

    #[test]
    fn cap_with_zero_head_and_tail_writes_only_the_marker() {
        let (log, summary) = cap_through(&[b"abc".to_vec()], 0, 0);
        assert_eq!(log, dropped_marker(3).as_bytes());
        assert_eq!(summary.dropped, 3);
    }

    #[test]
    fn cap_without_sink_counts_only() {
        let mut cap = CapLog::<Vec<u8>>::new(None, 2, 2);
        cap.push(b"abcdefgh");
        assert_eq!(cap.ring.buf.capacity(), 0);
        let summary = cap.finish();
        assert_eq!((summary.total, summary.dropped), (8, 4));
    }

    /// Accepts `budget` bytes, then fails.
    struct Failing {
        budget: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::Error::other("disk full"));
            }
            let n = buf.len().min(self.budget);
            self.budget -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn cap_survives_a_failing_sink() {
        let mut cap = CapLog::new(Some(Failing { budget: 5 }), 10, 10);
        cap.push(b"0123456789");
        assert!(cap.sink.is_none());
        cap.push(&[b'x'; 100]);
        let summary = cap.finish();
        assert_eq!(summary.total, 110);
        assert_eq!(summary.dropped, 90);
        assert_eq!(summary.failure.as_deref(), Some("disk full"));
    }

    #[test]
    fn ring_wraps_and_stays_bounded() {
        let mut ring = TailRing::new(4);
        ring.push(b"ab");
        ring.push(b"cde");
        ring.push(b"f");
        let (a, b) = ring.slices();
        assert_eq!([a, b].concat(), b"cdef");
        ring.push(b"0123456789");
        let (a, b) = ring.slices();
        assert_eq!([a, b].concat(), b"6789");
        assert!(ring.buf.capacity() <= 4);
    }

    proptest! {
        #[test]
        fn cap_matches_the_reference(
            chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..12),
            head in 0usize..50,
            tail in 0usize..50,
        ) {
            let all = chunks.concat();
            let (log, summary) = cap_through(&chunks, head, tail);
            prop_assert_eq!(&log, &expected_log(&all, head, tail));
            prop_assert_eq!(summary.total, all.len() as u64);
            prop_assert_eq!(summary.dropped, all.len().saturating_sub(head + tail) as u64);
        }
    }
}
