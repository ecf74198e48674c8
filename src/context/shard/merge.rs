//! Stores merged into one (`flakelab merge`): a sharded session's shards
//! from CI, or any stores of one plan. Everything is read and checked first
//! (runs deduplicated by id, a sharded session's records joined with
//! [`super::join`], a conflict refused with the field named); only then is
//! anything written, so a refused merge writes nothing.
//!
//! Runs are streamed, never held: the check pass keeps, per run, a digest
//! of its id and of its content and where it was first read (40 bytes); the
//! write pass reads each input again and appends the runs it was first for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::context::shard;
use crate::error::{Error, Result};
use crate::record::{LadderRecord, RunRecord, SessionRecord};
use crate::screen::ScreenRecord;
use crate::store::foreign::{open_source, Limits, Source};
use crate::store::Store;

/// What a merge did.
#[derive(Debug)]
pub struct Merge {
    /// Inputs merged.
    pub inputs: usize,
    /// Whether the destination was a store before.
    pub existed: bool,
    /// The merged store's sessions.
    pub sessions: Vec<SessionRecord>,
    /// Sessions new or joined.
    pub new_sessions: usize,
    /// Distinct runs.
    pub runs: u64,
    /// Runs written.
    pub new_runs: u64,
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

/// Merges the stores at `inputs` (directories or archives, each unpacked
/// within `limits`) into the store at `into`, created when absent.
pub fn merge(inputs: &[PathBuf], into: &Path, limits: Limits) -> Result<Merge> {
    let sources: Vec<Source> = (inputs.iter())
        .map(|p| open_source(p, limits))
        .collect::<Result<_>>()?;
    let existed = Store::is_store(into);
    let dest = existed.then(|| Store::open(into)).transpose()?;

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
        None => Store::open(into)?,
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
                    dest.copy_run_files(&source.store, &run)?;
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

    Ok(Merge {
        inputs: sources.len(),
        existed,
        sessions: merged.sessions,
        new_sessions,
        runs: distinct,
        new_runs,
    })
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
