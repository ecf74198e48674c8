//! How the store opens its files: never through a symbolic link, never a
//! FIFO, a device or a directory. A store is data that travels (CI
//! artifacts, archives, copies), so a link in it must not make flakelab read
//! or write a file elsewhere, and a FIFO must not block it. The final path
//! component is opened with `O_NOFOLLOW | O_NONBLOCK` (a FIFO then opens
//! without waiting for a writer) and the opened file must be a regular one.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

use nix::libc;

/// Opens `path` for reading.
pub(crate) fn read(path: &Path) -> io::Result<File> {
    opened(OpenOptions::new().read(true), path)
}

/// Opens `path` for reading and appending, creating it when missing.
pub(crate) fn append(path: &Path) -> io::Result<File> {
    opened(
        OpenOptions::new().read(true).append(true).create(true),
        path,
    )
}

fn opened(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refused("is a symbolic link"),
            _ => e,
        })?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(refused(if kind.is_fifo() {
        "is a FIFO"
    } else if kind.is_block_device() || kind.is_char_device() {
        "is a device"
    } else if kind.is_dir() {
        "is a directory"
    } else {
        "is not a regular file"
    }))
}

/// The error for an entry a store must not hold, saying what it is.
fn refused(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{what}: a store holds regular files only, and flakelab follows no link in one"),
    )
}

/// The longest line read as a record (16 MiB): a longer one is skipped and
/// counted, never buffered whole.
pub const MAX_LINE: usize = 16 << 20;

/// What [`read_line`] read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// The end of the file.
    End,
    /// A line, in the buffer (its newline included when it had one).
    Line,
    /// A line longer than [`MAX_LINE`], read to its end and dropped.
    TooLong,
}

/// Reads the next line of `reader` into `line` (cleared first), holding at
/// most [`MAX_LINE`] bytes of it.
pub(crate) fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<LineRead> {
    line.clear();
    let (mut read, mut too_long) = (0usize, false);
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(at) => (&buf[..=at], true),
            None => (buf, false),
        };
        let n = chunk.len();
        read += n;
        if line.len() + n > MAX_LINE {
            too_long = true;
            line.clear();
        } else if !too_long {
            line.extend_from_slice(chunk);
        }
        reader.consume(n);
        if done {
            break;
        }
    }
    Ok(match (read, too_long) {
        (0, _) => LineRead::End,
        (_, true) => LineRead::TooLong,
        _ => LineRead::Line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_directories_are_refused_and_a_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runs.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        assert!(read(&file).is_ok());
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = dir.path().join("fifo.jsonl");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        for (path, what) in [
            (&link, "is a symbolic link"),
            (&fifo, "is a FIFO"),
            (&dir.path().to_path_buf(), "is a directory"),
        ] {
            let read = read(path).unwrap_err().to_string();
            assert!(read.starts_with(what), "{read}");
            if path != dir.path() {
                let append = append(path).unwrap_err().to_string();
                assert!(append.starts_with(what), "{append}");
            }
        }
        // Appending never wrote through the link.
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}\n");
        let null = read(Path::new("/dev/null")).unwrap_err().to_string();
        assert!(null.starts_with("is a device"), "{null}");
    }

    #[test]
    fn a_line_past_the_limit_is_skipped_whole_and_the_next_one_read() {
        let long = vec![b'x'; 3 * MAX_LINE];
        let text = [b"{}\n".as_slice(), &long, b"\n{\"a\":1}"].concat();
        let mut reader = io::BufReader::with_capacity(4096, text.as_slice());
        let mut line = Vec::new();
        assert_eq!(read_line(&mut reader, &mut line).unwrap(), LineRead::Line);
        assert_eq!(line, b"{}\n");
        assert_eq!(
            read_line(&mut reader, &mut line).unwrap(),
            LineRead::TooLong
        );
        assert!(line.capacity() <= 2 * MAX_LINE, "never held whole");
        assert_eq!(read_line(&mut reader, &mut line).unwrap(), LineRead::Line);
        assert_eq!(line, b"{\"a\":1}");
        assert_eq!(read_line(&mut reader, &mut line).unwrap(), LineRead::End);
    }
}
