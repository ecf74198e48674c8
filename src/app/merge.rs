//! `flakelab merge STORE... [--into DIR]`: stores (directories, or `.tar` /
//! `.tar.gz` archives of one, as CI artifacts come) merged into one through
//! the store's own reads and appends. Everything is read and checked first
//! (runs deduplicated by id, a sharded session's records joined with
//! `shard::join`, a conflict refused with the field named); only then is
//! anything written, so a refused merge writes nothing.
//!
//! Runs are streamed, never held: the check pass keeps, per run, a digest
//! of its id and of its content and where it was first read (40 bytes); the
//! write pass reads each input again and appends the runs it was first for.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::cli::MergeArgs;
use crate::error::{Error, Result, EXIT_OK};
use crate::record::{LadderRecord, RunRecord, SessionRecord};
use crate::screen::ScreenRecord;
use crate::shard;
use crate::store::Store;

/// One input, opened: its store and the name it is shown by.
struct Source {
    shown: String,
    store: Store,
    /// Holds an unpacked archive until the merge is done.
    _unpacked: Option<tempfile::TempDir>,
}

/// What the merged store will hold, and where each record came from.
#[derive(Default)]
struct Merged {
    sessions: Vec<SessionRecord>,
    session_from: BTreeMap<String, String>,
    /// Every run read, in reading order (see [`SeenRun`]).
    runs: Vec<SeenRun>,
    /// Runs read so far.
    read: u64,
    screens: BTreeMap<String, ScreenRecord>,
    ladders: BTreeMap<String, LadderRecord>,
    /// `scan --prove` results, by session.
    proves: BTreeMap<String, crate::scan::prove::ProveRecord>,
}

/// One run as the check pass saw it.
#[derive(Clone, Copy)]
struct SeenRun {
    /// Digest of its id.
    id: u128,
    /// Digest of its content.
    content: u64,
    /// The input it was read from (`usize::MAX`: the destination).
    from: usize,
    /// Its position in reading order.
    order: u64,
}

/// A 128-bit digest of `bytes` (SHA-256, truncated).
fn digest128(bytes: &[u8]) -> u128 {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    u128::from_le_bytes(d[..16].try_into().expect("16 bytes"))
}

/// The digest of a run's content, as written.
fn content_of(run: &RunRecord) -> u64 {
    let text = serde_json::to_vec(run).unwrap_or_default();
    digest128(&text) as u64
}

/// Each input's runs to write (by id digest, sorted), and how many
/// distinct runs there are, after checking that every run held twice is
/// held with the same content: the first input that held a run writes it,
/// none when the destination already held it.
fn plan_writes(
    merged: &mut Merged,
    sources: &[Source],
    dest: Option<&Store>,
) -> Result<(Vec<Vec<u128>>, u64)> {
    let mut runs = std::mem::take(&mut merged.runs);
    runs.sort_unstable_by_key(|r| (r.id, r.order));
    let mut writes = vec![Vec::new(); sources.len()];
    let mut distinct = 0;
    for group in runs.chunk_by(|a, b| a.id == b.id) {
        distinct += 1;
        let first = group[0];
        if let Some(other) = group.iter().find(|r| r.content != first.content) {
            return Err(described_conflict(sources, dest, first, *other));
        }
        if first.from != usize::MAX {
            writes[first.from].push(first.id);
        }
    }
    for w in &mut writes {
        w.sort_unstable();
    }
    Ok((writes, distinct))
}

/// The conflict of two runs with one id and different content, with the
/// first field that differs (both read again to find it).
fn described_conflict(sources: &[Source], dest: Option<&Store>, a: SeenRun, b: SeenRun) -> Error {
    let find = |from: usize| -> Option<(RunRecord, String)> {
        let (store, shown) = match from {
            usize::MAX => (dest?, "the destination".to_string()),
            i => (&sources[i].store, sources[i].shown.clone()),
        };
        let (sessions, _) = store.load_sessions().ok()?;
        let mut found = None;
        for s in sessions {
            let _ = store.each_run(&s.id, |r| {
                if found.is_none() && digest128(r.id.as_bytes()) == a.id {
                    found = Some(r);
                }
                Ok(())
            });
            if found.is_some() {
                break;
            }
        }
        found.map(|r| (r, shown))
    };
    match (find(a.from), find(b.from)) {
        (Some((x, _)), Some((y, shown))) => conflict(format!(
            "run {} is held twice with different content: {} (in {shown})",
            x.id,
            shard::first_difference(&x, &y)
        )),
        _ => conflict("a run is held twice with different content".into()),
    }
}

fn conflict(message: String) -> Error {
    Error::usage(
        message,
        "merge only stores of one plan (the same seed, command, cells, runs per cell, shard count and flakelab version); nothing was written",
    )
}

pub(super) fn merge_cmd(args: &MergeArgs) -> Result<i32> {
    let into = match &args.into {
        Some(d) => d.clone(),
        None => PathBuf::from(crate::store::DEFAULT_ROOT),
    };
    let sources: Vec<Source> = args
        .stores
        .iter()
        .map(|p| {
            open_source(
                p,
                Limits {
                    bytes: args.unpack_limit,
                    entries: args.unpack_entries,
                },
            )
        })
        .collect::<Result<_>>()?;
    let existed = Store::is_store(&into);
    let dest = existed.then(|| Store::open(&into)).transpose()?;

    // Read and check everything: the destination's own records first.
    let mut merged = Merged::default();
    let held = match &dest {
        Some(d) => read_into(&mut merged, d, &into.display().to_string(), usize::MAX)?,
        None => Held::default(),
    };
    for (i, source) in sources.iter().enumerate() {
        read_into(&mut merged, &source.store, &source.shown, i)?;
    }

    let (writes, distinct) = plan_writes(&mut merged, &sources, dest.as_ref())?;

    // Then write what is new.
    let dest = match dest {
        Some(d) => d,
        None => Store::open(&into)?,
    };
    let mut new_sessions = 0;
    for s in &merged.sessions {
        match held.sessions.get(&s.id) {
            Some(old) if old == s => {}
            Some(_) => {
                dest.replace_session(s)?;
                new_sessions += 1;
            }
            None => {
                dest.append_session(s)?;
                new_sessions += 1;
            }
        }
    }
    let mut new_runs = 0u64;
    let session_ids: Vec<String> = merged.sessions.iter().map(|s| s.id.clone()).collect();
    for id in &session_ids {
        for (from, source) in sources.iter().enumerate() {
            let mine = &writes[from];
            if mine.is_empty() {
                continue;
            }
            source.store.each_run(id, |run| {
                if mine.binary_search(&digest128(run.id.as_bytes())).is_ok() {
                    copy_files(&source.store, &dest, &run)?;
                    dest.append_run(&run)?;
                    new_runs += 1;
                }
                Ok(())
            })?;
        }
    }
    for (id, screen) in &merged.screens {
        if !held.screens.contains(id) {
            dest.append_screen(screen)?;
        }
    }
    for (id, prove) in &merged.proves {
        if !held.proves.contains(id) {
            dest.append_prove(prove)?;
        }
    }
    for (id, ladder) in &merged.ladders {
        if !held.ladders.contains(id) {
            dest.append_ladder(ladder)?;
        }
    }
    // How each session stopped: a shard that did not finish speaks for the
    // merged session (the first such, in the order the stores were given).
    for s in &merged.sessions {
        if dest.session_end(&s.id)?.is_some() {
            continue;
        }
        let mut ends = Vec::new();
        for source in &sources {
            ends.extend(source.store.session_end(&s.id)?);
        }
        let end = (ends.iter())
            .find(|e| e.how != crate::record::SessionStop::Finished)
            .or(ends.first());
        if let Some(end) = end {
            dest.append_session_end(end)?;
        }
    }

    println!(
        "merged {} store(s) into {}: {} session(s) ({} new or joined), {} run(s) ({} new)",
        sources.len(),
        into.display(),
        merged.sessions.len(),
        new_sessions,
        distinct,
        new_runs
    );
    for s in &merged.sessions {
        let Some(set) = &s.shards else { continue };
        let present: Vec<String> = set.present.iter().map(|p| p.index.to_string()).collect();
        println!(
            "session {}: {} of {} shards present ({})",
            s.id,
            set.present.len(),
            set.total,
            present.join(", ")
        );
        for index in (1..=set.total).filter(|i| set.present.iter().all(|p| p.index != *i)) {
            let missing = shard::MissingShard {
                index,
                planned_runs: shard::planned_runs(
                    index,
                    set.total,
                    s.plan.runs_per_cell,
                    s.plan.cells.len(),
                ),
            };
            println!("  {}", shard::missing_text(&missing, set.total));
        }
    }
    if !existed && merged.sessions.is_empty() {
        eprintln!("flakelab: the stores held no session");
    }
    Ok(EXIT_OK)
}

/// The ids the destination already held.
#[derive(Default)]
struct Held {
    sessions: BTreeMap<String, SessionRecord>,
    screens: std::collections::BTreeSet<String>,
    ladders: std::collections::BTreeSet<String>,
    proves: std::collections::BTreeSet<String>,
}

/// Reads one store's records into `merged`, checking each against what is
/// there: source `index` (`usize::MAX` for the destination itself).
fn read_into(merged: &mut Merged, store: &Store, shown: &str, index: usize) -> Result<Held> {
    let mut held = Held::default();
    let (sessions, _) = store.load_sessions()?;
    let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
    for s in sessions {
        if index == usize::MAX {
            held.sessions.insert(s.id.clone(), s.clone());
        }
        match merged.sessions.iter_mut().find(|m| m.id == s.id) {
            Some(m) => {
                *m = shard::join(m, &s).map_err(|why| {
                    conflict(format!(
                        "{why} (in {} and {shown})",
                        merged.session_from.get(&s.id).map_or("?", String::as_str)
                    ))
                })?;
            }
            None => {
                merged.session_from.insert(s.id.clone(), shown.to_string());
                merged.sessions.push(s);
            }
        }
    }
    for id in &ids {
        store.each_run(id, |run| {
            merged.runs.push(SeenRun {
                id: digest128(run.id.as_bytes()),
                content: content_of(&run),
                from: index,
                order: merged.read,
            });
            merged.read += 1;
            Ok(())
        })?;
        // A sharded confirmation stage's records (the screen run alone,
        // each shard's part) are carried as written: they join on read.
        for screen in store.screen_records_of(id)? {
            let key = screen.key().into_owned();
            if index == usize::MAX {
                held.screens.insert(key.clone());
            }
            match merged.screens.get(&key) {
                Some(h) if *h == screen => {}
                Some(h) => {
                    return Err(conflict(format!(
                        "the screen record {key} differs: {} (in {shown})",
                        shard::first_difference(h, &screen)
                    )))
                }
                None => {
                    merged.screens.insert(key, screen);
                }
            }
        }
    }
    for id in &ids {
        let Some(prove) = store.prove_of(id)? else {
            continue;
        };
        if index == usize::MAX {
            held.proves.insert(id.clone());
        }
        match merged.proves.get(id) {
            Some(h) if *h == prove => {}
            Some(h) => {
                return Err(conflict(format!(
                    "the scan proof of session {id} differs: {} (in {shown})",
                    shard::first_difference(h, &prove)
                )))
            }
            None => {
                merged.proves.insert(id.clone(), prove);
            }
        }
    }
    let (ladders, _) = store.load_ladders()?;
    for l in ladders {
        if index == usize::MAX {
            held.ladders.insert(l.id.clone());
        }
        match merged.ladders.get(&l.id) {
            Some(h) if *h == l => {}
            Some(h) => {
                return Err(conflict(format!(
                    "ladder {} is held twice with different content: {} (in {shown})",
                    l.id,
                    shard::first_difference(h, &l)
                )))
            }
            None => {
                merged.ladders.insert(l.id.clone(), l);
            }
        }
    }
    Ok(held)
}

/// A store-relative path that stays inside the store.
fn inside(path: &Path) -> bool {
    path.is_relative() && path.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Copies a run's log and JUnit report (those kept in its store) along.
fn copy_files(from: &Store, to: &Store, run: &RunRecord) -> Result<()> {
    for rel in [&run.log, &run.junit].into_iter().flatten() {
        if !inside(rel) {
            continue;
        }
        let src = from.root().join(rel);
        let dst = to.root().join(rel);
        if std::fs::symlink_metadata(&dst).is_ok() {
            continue;
        }
        // Never through a link: the inputs were checked, and are opened
        // without following one all the same.
        let mut input = match crate::store::open::read(&src) {
            Ok(input) => input,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::store(&src, e, NOTHING_LINKED)),
        };
        let writable = |e| Error::store(&dst, e, "check that the merged store is writable");
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(writable)?;
        }
        let mut output = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&dst)
            .map_err(writable)?;
        std::io::copy(&mut input, &mut output).map_err(writable)?;
    }
    Ok(())
}

/// The fix for a store that holds something other than regular files.
const NOTHING_LINKED: &str =
    "a store to merge holds regular files and directories only: replace the link, FIFO or device by the file it stands for (nothing was written)";

/// Refuses a store directory that holds anything but directories and
/// regular files with one link each: a symbolic link (to `/proc/self/environ`,
/// another store, any host file), a FIFO, a device or a hard link to a file
/// outside it would carry what is not the store's into the merged one.
fn only_files(root: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::store(&dir, e, NOTHING_LINKED))?;
        for entry in entries {
            let path = entry
                .map_err(|e| Error::store(&dir, e, NOTHING_LINKED))?
                .path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| Error::store(&path, e, NOTHING_LINKED))?;
            let kind = meta.file_type();
            let refused = if kind.is_dir() {
                dirs.push(path.clone());
                None
            } else if kind.is_symlink() {
                Some("is a symbolic link")
            } else if !kind.is_file() {
                Some("is not a regular file (a FIFO, a socket or a device)")
            } else if meta.nlink() > 1 {
                Some("is a hard link to a file that may be outside the store")
            } else {
                None
            };
            if let Some(what) = refused {
                return Err(Error::store(&path, what, NOTHING_LINKED));
            }
        }
    }
    Ok(())
}

/// Opens one input: a store directory, a directory holding one store, or
/// an archive of one (unpacked into a temporary directory).
fn open_source(path: &Path, limits: Limits) -> Result<Source> {
    let shown = path.display().to_string();
    let not_store = |what: &str| {
        Error::usage(
            format!("{shown} {what}"),
            "give store directories (e.g. .flakelab) or .tar / .tar.gz archives of one",
        )
    };
    if path.is_dir() {
        let root = find_store(path).ok_or_else(|| not_store("holds no flakelab store"))?;
        only_files(&root)?;
        return Ok(Source {
            shown,
            store: Store::open(&root)?,
            _unpacked: None,
        });
    }
    if !path.is_file() {
        return Err(not_store("does not exist"));
    }
    let name = path.to_string_lossy().to_lowercase();
    let gz = name.ends_with(".tar.gz") || name.ends_with(".tgz");
    if !gz && !name.ends_with(".tar") {
        return Err(not_store(
            "is neither a directory nor a .tar / .tar.gz / .tgz archive",
        ));
    }
    let tmp = tempfile::tempdir().map_err(|e| {
        Error::store(
            std::env::temp_dir(),
            e,
            "set TMPDIR to a writable directory",
        )
    })?;
    let file = std::fs::File::open(path)
        .map_err(|e| Error::store(path, e, "check the archive's permissions"))?;
    let reader: Box<dyn std::io::Read> = if gz {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    unpack(reader, tmp.path(), limits).map_err(|e| match e {
        Unpack::Refused(why) => Error::usage(format!("{shown}: {why}"), NOTHING_LINKED),
        Unpack::TooBig(why) => Error::usage(
            format!("{shown}: {why}"),
            "raise --unpack-limit / --unpack-entries if the archive is a store you trust (nothing was written)",
        ),
        Unpack::Full(e) => Error::store_io(
            tmp.path(),
            &e,
            "the temporary directory is full: set TMPDIR to a directory with room for the unpacked store",
        ),
        Unpack::Other(e) => not_store(&format!("cannot be unpacked: {e}")),
    })?;
    let root = find_store(tmp.path()).ok_or_else(|| not_store("holds no flakelab store"))?;
    Ok(Source {
        shown,
        store: Store::open(&root)?,
        _unpacked: Some(tmp),
    })
}

/// `dir` itself when it is a store, else the one store up to three levels
/// below it (an artifact's or archive's wrapping directories).
fn find_store(dir: &Path) -> Option<PathBuf> {
    if Store::is_store(dir) {
        return Some(dir.to_path_buf());
    }
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for d in &level {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                // A link to a directory is not followed to find a store.
                .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
                .collect();
            children.sort();
            if let Some(found) = children.iter().find(|p| Store::is_store(p)) {
                return Some(found.clone());
            }
            next.extend(children);
        }
        level = next;
    }
    None
}

/// How much one archive may unpack.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Bytes of file content, added up.
    bytes: u64,
    /// Entries, files and directories alike.
    entries: u64,
}

/// Why an archive was not unpacked.
#[derive(Debug)]
enum Unpack {
    /// It holds an entry a store must not (a link, a device, a FIFO, a
    /// path leaving the directory).
    Refused(String),
    /// It is larger than the limits.
    TooBig(String),
    /// The temporary directory's filesystem is full (ENOSPC, EDQUOT).
    Full(std::io::Error),
    /// Anything else (a corrupt archive).
    Other(std::io::Error),
}

/// Unpacks the archive `reader` into `dir`, entry by entry: directories and
/// regular files only, each inside `dir`, within `limits` (checked from the
/// headers, before any byte of the entry is written).
fn unpack(
    reader: impl std::io::Read,
    dir: &Path,
    limits: Limits,
) -> std::result::Result<(), Unpack> {
    use tar::EntryType;
    let mut archive = tar::Archive::new(reader);
    let (mut bytes, mut entries) = (0u64, 0u64);
    for entry in archive.entries().map_err(Unpack::Other)? {
        let mut entry = entry.map_err(Unpack::Other)?;
        let kind = entry.header().entry_type();
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "an entry".into());
        match kind {
            EntryType::Regular | EntryType::Continuous | EntryType::Directory => {}
            EntryType::XGlobalHeader | EntryType::XHeader => continue,
            EntryType::Symlink => {
                return Err(Unpack::Refused(format!("{name} is a symbolic link")))
            }
            EntryType::Link => return Err(Unpack::Refused(format!("{name} is a hard link"))),
            _ => {
                return Err(Unpack::Refused(format!(
                    "{name} is not a regular file or a directory ({kind:?})"
                )))
            }
        }
        entries += 1;
        bytes = bytes.saturating_add(entry.header().size().map_err(Unpack::Other)?);
        if entries > limits.entries {
            return Err(Unpack::TooBig(format!(
                "it holds more than {} entries (--unpack-entries)",
                limits.entries
            )));
        }
        if bytes > limits.bytes {
            return Err(Unpack::TooBig(format!(
                "it unpacks to more than {} bytes (--unpack-limit)",
                limits.bytes
            )));
        }
        // `unpack_in` refuses a path that would land outside `dir`.
        match entry.unpack_in(dir) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Unpack::Refused(format!(
                    "{name} would land outside the store"
                )))
            }
            Err(e) if full(&e) => {
                return Err(Unpack::Full(std::io::Error::from_raw_os_error(
                    nix::libc::ENOSPC,
                )))
            }
            Err(e) => return Err(Unpack::Other(e)),
        }
    }
    Ok(())
}

/// Whether `e` (or an error it wraps: the tar crate adds the entry's path)
/// says the filesystem is full.
fn full(e: &std::io::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if matches!(
                io.raw_os_error(),
                Some(nix::libc::ENOSPC | nix::libc::EDQUOT)
            ) {
                return true;
            }
        }
        cause = c.source();
    }
    false
}
