//! The history file, `history/observations.jsonl`: what `flakelab ingest`
//! recorded from CI, as plain JSON Lines. The store is its only writer.
//!
//! Lines, each a JSON object whose first field is its schema:
//!
//! - `flakelab.ci-report/1`: one ingested report (context, commit,
//!   provenance, path, digest, identity key, and the number `n` of
//!   observations that follow);
//! - `flakelab.observation/1`: up to [`CHUNK`] of that report's
//!   executions, `"o": [[test, outcome, rep, file, line], …]` (outcome `p`
//!   `f` `e` `s`; `rep` omitted when 0 and nothing follows; file and line
//!   only for failures);
//! - `flakelab.counts/1` and `flakelab.folded/1`: what `flakelab compact`
//!   left (per (test, context, commit) counts, and the keys of the reports
//!   folded into them).
//!
//! A report and its observations go out in one locked write. Reading is
//! tolerant and deduplicates, because stores are merged with `cat`: a
//! report whose key was read before (or was folded) is skipped with its
//! observations; a report cut short (fewer observations than `n`) is
//! skipped and counted, and its key stays free so ingesting it again
//! records it whole.

use std::collections::HashSet;
use std::fs;
use std::io::{BufReader, ErrorKind, Write as _};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{append_bytes, Store, HINT_READ, HINT_WRITE};
use crate::error::{Error, Result};
use crate::record::history::Head;
use crate::record::history::{
    observation_code, outcome_of, CountsRecord, FoldedRecord, Item, Observation, ReportRecord,
    COUNTS_SCHEMA, FOLDED_SCHEMA, OBSERVATION_SCHEMA, REPORT_SCHEMA, RETRIED_CODE,
};

/// Directory of the history file, under the store.
pub const HISTORY_DIR: &str = "history";
/// The history file, under [`HISTORY_DIR`].
pub const HISTORY_FILE: &str = "observations.jsonl";
/// Observations per `flakelab.observation/1` line.
pub const CHUNK: usize = 1000;

/// What a history read skipped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HistoryStats {
    /// Reports read and counted.
    pub reports: u64,
    /// Reports skipped because the same execution was read before.
    pub duplicate_reports: u64,
    /// Reports cut short (fewer observations than recorded): not counted.
    pub truncated_reports: u64,
    /// Lines that did not parse, or observations of no report.
    pub skipped_lines: u64,
}

#[derive(Serialize, Deserialize)]
struct ObsLine {
    schema: String,
    r: String,
    o: Vec<Vec<serde_json::Value>>,
}

/// What [`Store::history_index`] found.
#[derive(Debug, Default, Clone)]
pub struct HistoryIndex {
    /// Identity keys of the complete and the folded reports.
    pub keys: HashSet<String>,
    /// The complete reports' heads, first seen first (folded reports keep
    /// none).
    pub heads: Vec<Head>,
}

/// What [`Store::history_keys`] reads of an observation line.
#[derive(Deserialize)]
struct ObsCount<'a> {
    #[serde(borrow)]
    r: std::borrow::Cow<'a, str>,
    o: EntryCount,
}

/// The entries of an observation line, counted and checked as
/// [`decode_entry`] would accept them, none kept.
#[derive(Default)]
struct EntryCount {
    entries: u64,
    broken: bool,
}

impl<'de> Deserialize<'de> for EntryCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = EntryCount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of observation entries")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<EntryCount, A::Error> {
                let mut c = EntryCount::default();
                while let Some(ok) = seq.next_element::<EntryOk>()? {
                    c.entries += 1;
                    c.broken |= !ok.0;
                }
                Ok(c)
            }
        }
        d.deserialize_seq(Entries)
    }
}

/// Whether one entry is one [`decode_entry`] accepts: a test id string, an
/// outcome letter, then optionally a repetition index (u32) and the rest.
struct EntryOk(bool);

impl<'de> Deserialize<'de> for EntryOk {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::IgnoredAny;
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = EntryOk;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an observation entry")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<EntryOk, A::Error> {
                let test = seq.next_element::<Value<'de>>()?;
                let outcome = seq.next_element::<Value<'de>>()?;
                let rep = seq.next_element::<Value<'de>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                let ok = matches!(test, Some(Value::Str(_)))
                    && matches!(outcome, Some(Value::Str(ref o)) if outcome_of(o).is_some())
                    && match rep {
                        None => true,
                        Some(Value::Uint(r)) => u32::try_from(r).is_ok(),
                        Some(_) => false,
                    };
                Ok(EntryOk(ok))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<EntryOk, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(EntryOk(false))
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<EntryOk, E> {
                Ok(EntryOk(false))
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<EntryOk, E> {
                Ok(EntryOk(false))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<EntryOk, E> {
                Ok(EntryOk(false))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<EntryOk, E> {
                Ok(EntryOk(false))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<EntryOk, E> {
                Ok(EntryOk(false))
            }
            fn visit_unit<E>(self) -> std::result::Result<EntryOk, E> {
                Ok(EntryOk(false))
            }
        }
        d.deserialize_any(Entry)
    }
}

/// One scalar of an entry, as much as the check needs (a string borrowed
/// when it has no escapes).
enum Value<'a> {
    Str(std::borrow::Cow<'a, str>),
    Uint(u64),
    Other,
}

impl<'de> Deserialize<'de> for Value<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::IgnoredAny;
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Value<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Str(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Str(std::borrow::Cow::Owned(s.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Uint(v))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_unit<E>(self) -> std::result::Result<Value<'de>, E> {
                Ok(Value::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Value<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Value::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Value<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Value::Other)
            }
        }
        d.deserialize_any(V)
    }
}

fn prefix(schema: &str) -> String {
    format!("{{\"schema\":\"{schema}\"")
}

impl Store {
    /// The history file's path.
    pub fn history_path(&self) -> PathBuf {
        self.root.join(HISTORY_DIR).join(HISTORY_FILE)
    }

    /// The identity keys the history holds: every complete report's and
    /// every folded one's. `ingest` loads them once and skips a report
    /// whose key is among them (dedup on write).
    ///
    /// Reads only what a key needs: a report line's `key` and `n`, and of
    /// each observation line its report and how many well-formed entries
    /// it holds (checked in place, nothing kept), so memory is the keys
    /// and one line, whatever the size of the history. A report is
    /// complete by the same rule [`Store::each_history`] reads it with.
    pub fn history_keys(&self) -> Result<HashSet<String>> {
        Ok(self.history_index()?.keys)
    }

    /// The keys ([`Store::history_keys`]) and the heads of the complete
    /// reports (for the history's check of indistinct matrix legs), in one
    /// read of report lines and entry counts.
    pub fn history_index(&self) -> Result<HistoryIndex> {
        let mut keys = HashSet::new();
        let mut heads = Vec::new();
        let report_p = prefix(REPORT_SCHEMA);
        let obs_p = prefix(OBSERVATION_SCHEMA);
        let folded_p = prefix(FOLDED_SCHEMA);
        // The open report, entries seen, broken.
        let mut open: Option<(ReportRecord, u64, bool)> = None;
        let mut close = |open: &mut Option<(ReportRecord, u64, bool)>,
                         keys: &mut HashSet<String>| {
            if let Some((r, seen, broken)) = open.take() {
                if !broken && seen == r.n && keys.insert(r.key.clone()) {
                    heads.push(Head::of(&r));
                }
            }
        };
        self.each_line(|line| {
            if line.starts_with(obs_p.as_bytes()) {
                match (&mut open, serde_json::from_slice::<ObsCount>(line)) {
                    (Some((r, seen, broken)), Ok(o)) if o.r == r.key => {
                        *seen += o.o.entries;
                        *broken |= o.o.broken;
                    }
                    (Some((_, _, broken)), Err(_)) => *broken = true,
                    _ => {}
                }
                return;
            }
            close(&mut open, &mut keys);
            if line.starts_with(report_p.as_bytes()) {
                if let Ok(r) = serde_json::from_slice::<ReportRecord>(line) {
                    open = Some((r, 0, false));
                }
            } else if line.starts_with(folded_p.as_bytes()) {
                if let Ok(f) = serde_json::from_slice::<FoldedRecord>(line) {
                    keys.extend(f.keys);
                }
            }
        })?;
        close(&mut open, &mut keys);
        Ok(HistoryIndex { keys, heads })
    }

    /// Appends one report and its observations, in one locked write.
    pub fn append_report(&self, report: &ReportRecord, obs: &[Observation]) -> Result<()> {
        let path = self.history_path();
        let dir = self.root.join(HISTORY_DIR);
        fs::create_dir_all(&dir).map_err(|e| Error::store_io(&dir, &e, HINT_WRITE))?;
        let text = encode(report, obs).map_err(|e| Error::store(&path, e, HINT_WRITE))?;
        append_bytes(&path, &text)
    }

    /// Replaces the history with what a compaction folded: the folded keys,
    /// then the counts. Written to a temporary file and renamed over the
    /// old one, so a crash leaves the old history or the new one.
    pub fn replace_history(&self, folded: &FoldedRecord, counts: &[CountsRecord]) -> Result<()> {
        let path = self.history_path();
        let dir = self.root.join(HISTORY_DIR);
        let io = |e: std::io::Error| Error::store_io(&path, &e, HINT_WRITE);
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        out.write_all(&json_line(&path, folded)?).map_err(io)?;
        for c in counts {
            out.write_all(&json_line(&path, c)?).map_err(io)?;
        }
        out.flush().map_err(io)?;
        drop(out);
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(())
    }

    /// The keys of every report a compaction folded (first pass of a read).
    pub fn folded_keys(&self) -> Result<HashSet<String>> {
        let mut keys = HashSet::new();
        let want = prefix(FOLDED_SCHEMA);
        self.each_line(|line| {
            if line.starts_with(want.as_bytes()) {
                if let Ok(f) = serde_json::from_slice::<FoldedRecord>(line) {
                    keys.extend(f.keys);
                }
            }
        })?;
        Ok(keys)
    }

    /// Calls `f` with each report (with its observations) and each counts
    /// line, in file order, deduplicated as the module doc says; reports
    /// whose key is in `folded` are skipped as duplicates. A missing file
    /// reads as empty.
    pub fn each_history(
        &self,
        folded: &HashSet<String>,
        mut f: impl FnMut(Item<'_>),
    ) -> Result<HistoryStats> {
        let mut stats = HistoryStats::default();
        let mut seen: HashSet<String> = HashSet::new();
        let mut open: Option<(ReportRecord, Vec<Observation>, bool)> = None;
        let report_p = prefix(REPORT_SCHEMA);
        let obs_p = prefix(OBSERVATION_SCHEMA);
        let counts_p = prefix(COUNTS_SCHEMA);
        let folded_p = prefix(FOLDED_SCHEMA);
        let mut close = |open: &mut Option<(ReportRecord, Vec<Observation>, bool)>,
                         stats: &mut HistoryStats,
                         f: &mut dyn FnMut(Item<'_>)| {
            if let Some((r, obs, broken)) = open.take() {
                if broken || obs.len() as u64 != r.n {
                    stats.truncated_reports += 1;
                } else if folded.contains(&r.key) || !seen.insert(r.key.clone()) {
                    stats.duplicate_reports += 1;
                } else {
                    stats.reports += 1;
                    f(Item::Report(&r, &obs));
                }
            }
        };
        self.each_line(|line| {
            if line.starts_with(obs_p.as_bytes()) {
                match (&mut open, serde_json::from_slice::<ObsLine>(line)) {
                    (Some((r, obs, broken)), Ok(o)) if o.r == r.key => {
                        for e in o.o {
                            match decode_entry(&e) {
                                Some(ob) => obs.push(ob),
                                None => *broken = true,
                            }
                        }
                    }
                    (Some((_, _, broken)), Err(_)) => *broken = true,
                    _ => stats.skipped_lines += 1,
                }
                return;
            }
            close(&mut open, &mut stats, &mut f);
            if line.starts_with(report_p.as_bytes()) {
                match serde_json::from_slice::<ReportRecord>(line) {
                    Ok(r) => open = Some((r, Vec::new(), false)),
                    Err(_) => stats.skipped_lines += 1,
                }
            } else if line.starts_with(counts_p.as_bytes()) {
                match serde_json::from_slice::<CountsRecord>(line) {
                    Ok(c) => f(Item::Counts(&c)),
                    Err(_) => stats.skipped_lines += 1,
                }
            } else if line.starts_with(folded_p.as_bytes()) {
                if let Ok(rec) = serde_json::from_slice::<FoldedRecord>(line) {
                    for note in &rec.infra {
                        f(Item::Infra(note));
                    }
                }
            } else {
                stats.skipped_lines += 1;
            }
        })?;
        close(&mut open, &mut stats, &mut f);
        Ok(stats)
    }

    /// Calls `f` with each non-blank line of the history file.
    fn each_line(&self, mut f: impl FnMut(&[u8])) -> Result<()> {
        let path = self.history_path();
        let file = match super::open::read(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::store(&path, e, HINT_READ)),
        };
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        loop {
            let read = super::open::read_line(&mut reader, &mut line)
                .map_err(|e| Error::store(&path, e, HINT_READ))?;
            match read {
                super::open::LineRead::End => return Ok(()),
                // Too long to be a record: unreadable to the caller, which
                // skips and counts it.
                super::open::LineRead::TooLong => {
                    f(b"\0");
                    continue;
                }
                super::open::LineRead::Line => {}
            }
            let t = line.trim_ascii();
            if !t.is_empty() {
                f(t);
            }
        }
    }
}

/// `v` as one JSON line.
fn json_line<T: Serialize>(path: &std::path::Path, v: &T) -> Result<Vec<u8>> {
    let mut b = serde_json::to_vec(v).map_err(|e| Error::store(path, e, HINT_WRITE))?;
    b.push(b'\n');
    Ok(b)
}

/// The lines of one report: its report line, then its observation lines.
fn encode(report: &ReportRecord, obs: &[Observation]) -> serde_json::Result<Vec<u8>> {
    let mut out = serde_json::to_vec(report)?;
    out.push(b'\n');
    for chunk in obs.chunks(CHUNK) {
        out.extend_from_slice(prefix(OBSERVATION_SCHEMA).as_bytes());
        out.extend_from_slice(b",\"r\":");
        serde_json::to_writer(&mut out, &report.key)?;
        out.extend_from_slice(b",\"o\":[");
        for (i, o) in chunk.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            serde_json::to_writer(&mut out, &o.test)?;
            out.extend_from_slice(b",\"");
            out.extend_from_slice(observation_code(o).as_bytes());
            out.push(b'"');
            if o.rep > 0 || o.file.is_some() || o.line.is_some() {
                out.extend_from_slice(format!(",{}", o.rep).as_bytes());
            }
            if o.file.is_some() || o.line.is_some() {
                out.push(b',');
                serde_json::to_writer(&mut out, &o.file)?;
                out.push(b',');
                serde_json::to_writer(&mut out, &o.line)?;
            }
            out.push(b']');
        }
        out.extend_from_slice(b"]}\n");
    }
    Ok(out)
}

fn decode_entry(e: &[serde_json::Value]) -> Option<Observation> {
    let test = e.first()?.as_str()?.to_string();
    let code = e.get(1)?.as_str()?;
    let outcome = outcome_of(code)?;
    let retried = code == RETRIED_CODE;
    let rep = match e.get(2) {
        None => 0,
        Some(v) => u32::try_from(v.as_u64()?).ok()?,
    };
    let file = e.get(3).and_then(|v| v.as_str()).map(str::to_string);
    let line = e
        .get(4)
        .and_then(serde_json::Value::as_u64)
        .and_then(|l| u32::try_from(l).ok());
    Some(Observation {
        test,
        outcome,
        retried,
        rep,
        file,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::history::{Context, Provenance};
    use crate::record::CaseOutcome;

    fn report(key: &str, n: u64) -> ReportRecord {
        ReportRecord {
            schema: REPORT_SCHEMA.into(),
            key: key.into(),
            context: Context::from([("os".to_string(), "linux".to_string())]),
            commit: Some("c1".into()),
            provenance: Provenance::default(),
            path: "junit.xml".into(),
            digest: "sha256:00".into(),
            n,
            infra: Vec::new(),
        }
    }

    fn obs(test: &str, outcome: CaseOutcome, rep: u32) -> Observation {
        Observation {
            test: test.into(),
            outcome,
            retried: false,
            rep,
            file: (outcome == CaseOutcome::Failed).then(|| "t.py".to_string()),
            line: (outcome == CaseOutcome::Failed).then_some(4),
        }
    }

    fn read(store: &Store) -> (Vec<(String, Vec<Observation>)>, HistoryStats) {
        let mut out = Vec::new();
        let folded = store.folded_keys().unwrap();
        let stats = store
            .each_history(&folded, |item| {
                if let Item::Report(r, o) = item {
                    out.push((r.key.clone(), o.to_vec()));
                }
            })
            .unwrap();
        (out, stats)
    }

    #[test]
    fn reports_round_trip_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let many: Vec<Observation> = (0..2500)
            .map(|i| {
                obs(
                    "a::\"quoted\"",
                    if i % 7 == 0 {
                        CaseOutcome::Failed
                    } else {
                        CaseOutcome::Passed
                    },
                    i,
                )
            })
            .collect();
        store.append_report(&report("k1", 2500), &many).unwrap();
        let (got, stats) = read(&store);
        assert_eq!(stats.reports, 1);
        assert_eq!(got[0].1, many);
        let text = fs::read_to_string(store.history_path()).unwrap();
        assert_eq!(text.lines().count(), 4, "a report line and three chunks");
        assert!(text
            .lines()
            .all(|l| l.starts_with("{\"schema\":\"flakelab.")));
    }

    #[test]
    fn a_catted_copy_is_read_once_and_a_cut_short_report_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .append_report(
                &report("k1", 2),
                &[
                    obs("a", CaseOutcome::Passed, 0),
                    obs("b", CaseOutcome::Failed, 0),
                ],
            )
            .unwrap();
        let text = fs::read(store.history_path()).unwrap();
        // `cat a b > c` of two stores holding the same report.
        let mut doubled = text.clone();
        doubled.extend_from_slice(&text);
        // A report whose observation line was lost.
        doubled.extend_from_slice(serde_json::to_string(&report("k2", 5)).unwrap().as_bytes());
        doubled.extend_from_slice(b"\nnot json\n");
        fs::write(store.history_path(), &doubled).unwrap();
        let (got, stats) = read(&store);
        assert_eq!(got.len(), 1);
        assert_eq!(
            stats,
            HistoryStats {
                reports: 1,
                duplicate_reports: 1,
                truncated_reports: 1,
                skipped_lines: 1
            }
        );
        let keys = store.history_keys().unwrap();
        assert!(keys.contains("k1") && !keys.contains("k2"), "{keys:?}");
    }

    #[test]
    fn keys_are_the_complete_reports_a_read_counts_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let two = [
            obs("a\\\"b", CaseOutcome::Passed, 0),
            obs("b", CaseOutcome::Failed, 3),
        ];
        store.append_report(&report("k1", 2), &two).unwrap();
        let mut text = fs::read(store.history_path()).unwrap();
        // k2: well-formed JSON whose entry has an outcome no reader knows.
        text.extend_from_slice(serde_json::to_string(&report("k2", 1)).unwrap().as_bytes());
        text.extend_from_slice(
            b"\n{\"schema\":\"flakelab.observation/1\",\"r\":\"k2\",\"o\":[[\"a\",\"x\"]]}\n",
        );
        // k3: a repetition index that is no integer.
        text.extend_from_slice(serde_json::to_string(&report("k3", 1)).unwrap().as_bytes());
        text.extend_from_slice(
            b"\n{\"schema\":\"flakelab.observation/1\",\"r\":\"k3\",\"o\":[[\"a\",\"p\",-1]]}\n",
        );
        // k4: complete, its entries spread over two lines, with escapes.
        text.extend_from_slice(serde_json::to_string(&report("k4", 2)).unwrap().as_bytes());
        text.extend_from_slice(b"\n{\"schema\":\"flakelab.observation/1\",\"r\":\"k4\",\"o\":[[\"a\\u00e9\",\"s\"]]}\n");
        text.extend_from_slice(b"{\"schema\":\"flakelab.observation/1\",\"r\":\"k4\",\"o\":[[\"b\",\"e\",0,\"f.py\",3]]}\n");
        // k5: an entry of the wrong report in between.
        text.extend_from_slice(serde_json::to_string(&report("k5", 1)).unwrap().as_bytes());
        text.extend_from_slice(
            b"\n{\"schema\":\"flakelab.observation/1\",\"r\":\"k1\",\"o\":[[\"a\",\"p\"]]}\n",
        );
        fs::write(store.history_path(), &text).unwrap();
        let (read, stats) = read(&store);
        let counted: HashSet<String> = read.into_iter().map(|(k, _)| k).collect();
        assert_eq!(stats.reports, 2);
        assert_eq!(store.history_keys().unwrap(), counted);
        assert_eq!(counted, HashSet::from(["k1".to_string(), "k4".to_string()]));
    }
}
