//! Our own children, as the kernel lists them in
//! `/proc/self/task/<tid>/children`, read through descriptors kept open for
//! the whole process: the sweep asks after every run, and opening the
//! `/proc` files afresh (two path walks, a directory read and six more
//! system calls) was the largest part of flakelab's own cost per run.
//!
//! The directory of our threads is kept open, its link count says how many
//! threads there are, and it is read (and rewound) only when there is more
//! than the main thread; the main thread's
//! `children` file is kept open and read again from offset 0 (a `seq_file`
//! makes its text anew on each read from the start). Another thread's file
//! is opened for each listing: such a thread may end and its id be given to
//! a new thread, which a kept descriptor would not follow, while the main
//! thread's id lasts as long as the process.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::FileExt as _;
use std::sync::Mutex;

use nix::dir::Dir;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// The kept descriptors, opened at the first listing.
struct Kept {
    /// `/proc/self/task`.
    tasks: Dir,
    /// Our process id, which is also the main thread's id.
    me: i32,
    /// `/proc/self/task/<me>/children`.
    main_children: File,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

/// Every child of every thread of this process, in the kernel's order.
pub(super) fn list() -> io::Result<Vec<i32>> {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let Kept {
        tasks,
        me,
        main_children,
    } = match &mut *kept {
        Some(kept) => kept,
        none => none.insert(open()?),
    };
    let mut text = Vec::new();
    // The directory's link count is 2 plus the number of threads: with the
    // main thread alone (the common case) its file is all there is to read,
    // without reading the directory.
    let links = nix::sys::stat::fstat(tasks.as_raw_fd())
        .map_err(io::Error::from)?
        .st_nlink;
    if links == 3 {
        read_from_start(main_children, &mut text)?;
        return parse(&text);
    }
    // Dropping the iterator rewinds the directory for the next listing.
    for entry in tasks.iter() {
        let entry = entry.map_err(io::Error::from)?;
        let Some(tid) = entry
            .file_name()
            .to_str()
            .ok()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        if tid == *me {
            read_from_start(main_children, &mut text)?;
        } else {
            match File::open(format!("/proc/self/task/{tid}/children")) {
                Ok(file) => read_from_start(&file, &mut text)?,
                // The thread ended since the directory was read.
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        text.push(b' ');
    }
    parse(&text)
}

fn open() -> io::Result<Kept> {
    let tasks = Dir::open(
        "/proc/self/task",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let me = i32::try_from(std::process::id()).map_err(io::Error::other)?;
    let main_children = File::open(format!("/proc/self/task/{me}/children"))?;
    Ok(Kept {
        tasks,
        me,
        main_children,
    })
}

/// Appends the whole of `file`, read from offset 0, to `text`. A
/// `seq_file` fills a read until the buffer is full or its text ends, so a
/// read shorter than the buffer was the last (no second read to see the
/// end); a full one is followed by more.
fn read_from_start(file: &File, text: &mut Vec<u8>) -> io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    let mut offset = 0u64;
    loop {
        match file.read_at(&mut buf, offset) {
            Ok(n) => {
                text.extend_from_slice(&buf[..n]);
                if n < buf.len() {
                    return Ok(());
                }
                offset += n as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}

/// The process ids of a `children` text: decimal ids separated by spaces.
fn parse(text: &[u8]) -> io::Result<Vec<i32>> {
    text.split(u8::is_ascii_whitespace)
        .filter(|id| !id.is_empty())
        .map(|id| {
            std::str::from_utf8(id)
                .ok()
                .and_then(|id| id.parse::<i32>().ok())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "unexpected text in a /proc children file: {:?}",
                            String::from_utf8_lossy(id)
                        ),
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt as _;
    use std::process::{Command, Stdio};

    #[test]
    fn the_task_directory_counts_two_links_more_than_threads() {
        // The fact the main-thread-only path rests on, checked on this
        // (many-threaded) test process; the threads are held still while
        // both are read.
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let extra = std::thread::spawn(move || held.recv().ok());
        let links = std::fs::metadata("/proc/self/task").unwrap().nlink();
        let entries = std::fs::read_dir("/proc/self/task").unwrap().count();
        let links_again = std::fs::metadata("/proc/self/task").unwrap().nlink();
        drop(hold);
        extra.join().unwrap();
        if links == links_again {
            assert_eq!(links, entries as u64 + 2);
        }
        assert!(links > 3, "this test's process has more than one thread");
    }

    #[test]
    fn parses_ids_and_rejects_garbage() {
        assert_eq!(parse(b"12 345 6 ").unwrap(), vec![12, 345, 6]);
        assert_eq!(parse(b"").unwrap(), Vec::<i32>::new());
        assert!(parse(b"12 x3").is_err());
    }

    #[test]
    fn a_kept_children_file_read_from_the_start_again_shows_the_children_of_now() {
        // What the main thread's kept descriptor relies on, shown on this
        // test's own thread: one descriptor, read again from offset 0.
        let tid = nix::unistd::gettid();
        let kept = File::open(format!("/proc/self/task/{tid}/children")).unwrap();
        let now = |file: &File| {
            let mut text = Vec::new();
            read_from_start(file, &mut text).unwrap();
            parse(&text).unwrap()
        };
        let mut child = Command::new("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        assert!(now(&kept).contains(&pid), "a live child is listed");
        assert!(list().unwrap().contains(&pid), "and by the listing of all");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!now(&kept).contains(&pid), "a reaped child is gone");
        assert!(!list().unwrap().contains(&pid));
    }

    #[test]
    fn a_child_of_another_thread_is_listed() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut child = Command::new("sleep")
                .arg("60")
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            tx.send(i32::try_from(child.id()).unwrap()).unwrap();
            done_rx.recv().unwrap();
            child.kill().unwrap();
            child.wait().unwrap();
        });
        let pid = rx.recv().unwrap();
        let listed = list().unwrap().contains(&pid);
        done_tx.send(()).unwrap();
        thread.join().unwrap();
        assert!(listed, "the other thread's child {pid} is listed");
    }
}
