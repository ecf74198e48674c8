//! Inspecting the processes a run really started, while it runs: which
//! programs they ran and what in them could escape a perturbation's
//! mechanism (DESIGN principle 2: proof from the subject, not a stand-in).
//!
//! For a run whose cell asks for it (a [`Watch`]), the inspection
//!
//! - takes the programs the launch execs in turn (the subject's `argv[0]`,
//!   a script's interpreter) from the files themselves,
//!   so a leader that ends before the first look is still known;
//! - from [`POLL_MIN`] after the spawn, walks the run's process tree every
//!   [`POLL_MIN`] or more while it runs (`/proc/PID/task/*/children` from the
//!   leader, and this process's own children that carry the run's marker:
//!   escapees reparented to us, the subreaper), and once more when the
//!   leader has ended (a run shorter than [`POLL_MIN`] gets only that look);
//! - records each program a process ran (a process that execs gets one
//!   [`SeenProcess`] per program): its executable, whether that is an ELF
//!   without an interpreter (statically linked) or a Go program
//!   (`.go.buildinfo`), whether it runs in secure-execution mode
//!   (`AT_SECURE`: set-user-ID, set-group-ID, file capabilities) and the
//!   watched variables of its environment.
//!
//! The looks run on a thread of their own (`Watcher`), so a read that
//! blocks never stalls the session. What it all means is decided elsewhere
//! (`perturb::proof`); this module only reads `/proc` and executables. It
//! never signals, traces or stops the subject (reading a process's
//! environment holds its memory-map lock for a moment, once per program):
//! a process that starts and ends between two looks is not seen.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::launch::{Launch, RUN_ID_VAR};
use super::procfs::{environ_has, parse_stat, ProcStat};

/// The shortest pause between two looks at a run's processes. The pause
/// grows to 50 times the CPU time of the last look (a run with many
/// processes costs more to walk), so the inspection takes at most 2% of a
/// CPU, up to [`POLL_MAX`].
pub const POLL_MIN: Duration = Duration::from_millis(10);
/// The longest pause between two looks.
pub const POLL_MAX: Duration = Duration::from_millis(100);

/// What to inspect in a run's processes: asked for by a cell whose
/// mechanism the subject can bypass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    /// Variables whose values are read from each process's environment.
    pub env: Vec<String>,
    /// The programs the launch execs in turn, as named in its argv (the
    /// subject's `argv[0]`): resolved against the
    /// launch's `PATH` and working directory like `execvp`.
    pub execs: Vec<String>,
}

/// One program a process of the run ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenProcess {
    /// The process id.
    pub pid: i32,
    /// The program this one came from, as an index into the run's list:
    /// the previous program of the same process (it exec'd), else the
    /// program its parent ran. None for the run's first program and for a
    /// process whose parent was not seen (an orphan reparented to us).
    pub parent: Option<usize>,
    /// The executable's canonical path; None when it could not be read.
    pub exe: Option<String>,
    /// The kernel's name for it (`comm`, at most 15 bytes).
    pub name: String,
    /// An ELF file without a `PT_INTERP` header: statically linked. None
    /// when the file could not be read or is not ELF.
    pub static_linked: Option<bool>,
    /// A Go program (an ELF with a `.go.buildinfo` section or Go's build
    /// information marker). None when unknown.
    pub go: Option<bool>,
    /// Started in secure-execution mode (`AT_SECURE`). None when unknown.
    pub secure: Option<bool>,
    /// The watched variables its environment held at its start (absent ones
    /// are unset); None when the environment could not be read.
    pub env: Option<BTreeMap<String, String>>,
}

impl SeenProcess {
    /// The executable, else its kernel name in parentheses.
    pub fn label(&self) -> String {
        self.exe
            .clone()
            .unwrap_or_else(|| format!("({})", self.name))
    }
}

/// How long the last look may take once the leader has ended.
const FINISH_BOUND: Duration = Duration::from_secs(2);

/// A run's inspection while it runs, on a thread of its own: reading
/// another process's environment waits for its memory-map lock, and a
/// process of the run that holds it (stuck in a page fault, say) must never
/// stall the session's runtime, its timeouts or the other runs.
pub(super) struct Watcher {
    ended: std::sync::mpsc::Sender<()>,
    done: tokio::sync::oneshot::Receiver<Vec<SeenProcess>>,
}

impl Watcher {
    /// Looks at once, then every [`POLL_MIN`] or more until [`finish`](Self::finish).
    pub(super) fn start(mut inspector: Inspector) -> Watcher {
        let (ended, ended_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        // Without a thread the run is not inspected: `finish` says so.
        let _ = std::thread::Builder::new()
            .name("flakelab-inspect".into())
            .spawn(move || {
                loop {
                    inspector.look(true);
                    let pause = inspector.next.saturating_duration_since(Instant::now());
                    match ended_rx.recv_timeout(pause) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                        _ => break,
                    }
                }
                let _ = done_tx.send(inspector.last_look());
            });
        Watcher { ended, done }
    }

    /// Once the leader has been reaped: the last look, then every program
    /// seen. None (with a warning) when the inspection could not finish.
    pub(super) async fn finish(self, warnings: &mut Vec<String>) -> Option<Vec<SeenProcess>> {
        let _ = self.ended.send(());
        match tokio::time::timeout(FINISH_BOUND, self.done).await {
            Ok(Ok(seen)) => Some(seen),
            Ok(Err(_)) => {
                warnings.push(
                    "the run's processes were not inspected (no thread for it); its cell's mechanism is proven by its probe only".into(),
                );
                None
            }
            Err(_) => {
                warnings.push(format!(
                    "inspecting the run's processes did not finish within {} s of its end (a read of /proc blocked); its cell's mechanism is proven by its probe only",
                    FINISH_BOUND.as_secs()
                ));
                None
            }
        }
    }
}

/// The inspection of one run.
pub(super) struct Inspector {
    watch: Watch,
    entry: Vec<u8>,
    me: i32,
    leader: i32,
    images: Vec<SeenProcess>,
    /// Programs known from the launch and not yet seen alive.
    planned: Vec<usize>,
    /// The launch's dynamically linked programs: the path an exec names
    /// (as the PATH search finds it) and the canonical executable it runs.
    resolved: Vec<(PathBuf, String)>,
    /// pid → (start time, `exe` link, index of its latest program).
    known: HashMap<i32, (Option<u64>, String, usize)>,
    /// Our own children that are not this run's, by (pid, start time).
    strangers: HashSet<(i32, u64)>,
    next: Instant,
}

impl Inspector {
    /// Prepares the inspection of the run about to be spawned from `launch`
    /// (with `marker` as its `FLAKELAB_RUN_ID`): the programs the launch
    /// execs, from their files, read before the spawn so that the run's
    /// measured time holds none of it. Reads nothing of another process;
    /// [`started`](Self::started) names the leader.
    pub(super) fn plan_for(watch: &Watch, launch: &Launch, marker: &str) -> Inspector {
        let mut this = Inspector {
            watch: watch.clone(),
            entry: format!("{RUN_ID_VAR}={marker}").into_bytes(),
            me: std::process::id() as i32,
            leader: 0,
            images: Vec::new(),
            planned: Vec::new(),
            resolved: Vec::new(),
            known: HashMap::new(),
            strangers: HashSet::new(),
            next: Instant::now(),
        };
        this.plan(launch);
        this
    }

    /// The launch's dynamically linked programs as the clock preload is told
    /// them (`FLAKELAB_CLOCK_EXES`): one line per program, the path its
    /// exec names and the canonical executable, tab-separated. A process
    /// exec'd by one of those paths names its executable without reading
    /// `/proc/self/exe`. [`plan`](Self::plan) keeps only absolute paths (a
    /// relative one names another file in another directory); one with a
    /// tab or newline is left out.
    pub(super) fn exes_for_preload(&self) -> String {
        let mut out = String::new();
        for (path, exe) in &self.resolved {
            let path = path.to_string_lossy();
            let clean = |s: &str| !s.contains(['\t', '\n']);
            if clean(&path) && clean(exe) {
                out.push_str(&format!("{path}\t{exe}\n"));
            }
        }
        out
    }

    /// The inspection of the run whose leader `leader` was just spawned
    /// (and has exec'd): the planned programs are its.
    pub(super) fn started(mut self, leader: i32) -> Inspector {
        self.leader = leader;
        for &i in &self.planned {
            self.images[i].pid = leader;
        }
        if let Some(entry) = self.known.remove(&0) {
            self.known.insert(leader, entry);
        }
        self
    }

    /// Looks at the run's processes; `leader_alive` is false once the leader
    /// has been reaped (its pid may then be reused by a stranger).
    fn look(&mut self, leader_alive: bool) {
        let began = thread_cpu_time();
        let mut queue: Vec<i32> = Vec::new();
        if leader_alive {
            queue.push(self.leader);
        }
        for pid in own_children() {
            if pid == self.leader {
                continue;
            }
            let Some(stat) = read_stat(pid) else { continue };
            let key = (pid, stat.start);
            if self.strangers.contains(&key) {
                continue;
            }
            let ours = self
                .known
                .get(&pid)
                .is_some_and(|k| k.0 == Some(stat.start))
                || std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| environ_has(&env, &self.entry));
            if ours {
                queue.push(pid);
            } else {
                self.strangers.insert(key);
            }
        }
        let mut visited = HashSet::new();
        while let Some(pid) = queue.pop() {
            if pid == self.me || !visited.insert(pid) {
                continue;
            }
            let Some((name, stat)) = read_stat_named(pid) else {
                continue;
            };
            let recycled = pid == self.leader
                && self
                    .known
                    .get(&pid)
                    .and_then(|k| k.0)
                    .is_some_and(|start| start != stat.start);
            if !stat.alive() || recycled {
                continue;
            }
            self.observe(pid, stat.ppid, stat.start, name);
            queue.extend(children_of(pid));
        }
        let cost = thread_cpu_time().saturating_sub(began);
        self.next = Instant::now() + (cost * 50).clamp(POLL_MIN, POLL_MAX);
    }

    /// The look once the leader has been reaped (at what outlived it), then
    /// the programs seen, in the order they were found.
    pub(super) fn last_look(mut self) -> Vec<SeenProcess> {
        self.look(false);
        self.images
    }

    /// One live process: a new program when its `exe` changed.
    fn observe(&mut self, pid: i32, ppid: i32, start: u64, name: String) {
        let link = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        if link.is_empty() && secure_of(pid) != Some(true) {
            // Unreadable: in the middle of an exec (the kernel's name is
            // still the old program's), ending, or not ours to read. Only
            // secure-execution mode could be proven of it; else look again
            // next time rather than record a program of unknown identity.
            return;
        }
        if let Some(slot) = self.planned.iter().position(|&i| {
            self.images[i].pid == pid && self.images[i].exe.as_deref() == Some(&link)
        }) {
            // A program known from the launch, now seen alive: only the live
            // process tells whether it runs in secure-execution mode (its
            // environment is the launch's, and its file was read).
            let index = self.planned.remove(slot);
            self.planned.retain(|&i| i > index);
            let image = &mut self.images[index];
            image.secure = secure_of(pid).or(image.secure);
            image.name = name;
            self.known.insert(pid, (Some(start), link, index));
            return;
        }
        let parent = match self.known.get(&pid) {
            Some((s, l, _)) if s.is_none_or(|s| s == start) && *l == link => return,
            Some((s, _, index)) if s.is_none_or(|s| s == start) => Some(*index),
            _ => self.known.get(&ppid).map(|k| k.2),
        };
        if self
            .known
            .get(&pid)
            .is_some_and(|k| k.0.is_some_and(|s| s != start))
        {
            // A recycled pid: what was planned for the old process is moot.
            self.planned.retain(|&i| self.images[i].pid != pid);
        }
        let image = self.inspect_live(pid, parent, name, &link);
        if image.exe.is_some()
            && std::fs::read_link(format!("/proc/{pid}/exe"))
                .ok()
                .map(|p| p.display().to_string())
                != Some(link.clone())
        {
            // It exec'd while being read: the facts may be the next
            // program's. The next look reads that one.
            return;
        }
        self.images.push(image);
        self.known
            .insert(pid, (Some(start), link, self.images.len() - 1));
    }

    fn inspect_live(
        &self,
        pid: i32,
        parent: Option<usize>,
        name: String,
        link: &str,
    ) -> SeenProcess {
        let elf = File::open(format!("/proc/{pid}/exe"))
            .ok()
            .and_then(|f| elf_facts_cached(&f));
        let secure = secure_of(pid);
        let env = std::fs::read(format!("/proc/{pid}/environ"))
            .ok()
            // A process that has just been forked and not yet exec'd, or a
            // kernel thread, reads as empty: treat that as unknown.
            .filter(|raw| !raw.is_empty())
            .map(|raw| watched_env(&raw, &self.watch.env));
        SeenProcess {
            pid,
            parent,
            exe: (!link.is_empty()).then(|| link.to_string()),
            name,
            static_linked: elf.map(|e| e.static_linked),
            go: elf.map(|e| e.go),
            secure,
            env,
        }
    }

    /// The programs the launch execs, from the files themselves: the
    /// leader's, whether or not it lives until the first look.
    fn plan(&mut self, launch: &Launch) {
        let env = launch_env(launch, &self.watch.env);
        let path_var = launch
            .env_set
            .get("PATH")
            .cloned()
            .or_else(|| {
                (!launch.env_unset.iter().any(|n| n == "PATH"))
                    .then(|| std::env::var("PATH").ok())
                    .flatten()
            })
            .unwrap_or_default();
        for program in &self.watch.execs {
            let Some(exec_path) = resolve(program, &path_var, &launch.cwd) else {
                break;
            };
            let file = interpreter(&exec_path, &path_var, &launch.cwd).unwrap_or(exec_path.clone());
            let Ok(canonical) = file.canonicalize() else {
                break;
            };
            let opened = File::open(&canonical).ok();
            let elf = opened.as_ref().and_then(elf_facts_cached);
            let secure = opened
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .map(|m| gains_ids(&m, &canonical));
            // The path as the exec hands it to the kernel (`AT_EXECFN`):
            // absolute only when the program is, or is found in an
            // absolute PATH entry.
            let named_absolute = program.starts_with('/')
                || (!program.contains('/')
                    && exec_path.parent().is_some_and(|d| {
                        path_var
                            .split(':')
                            .any(|e| e.starts_with('/') && Path::new(e) == d)
                    }));
            if named_absolute && elf.is_some_and(|e| !e.static_linked && !e.go) {
                self.resolved
                    .push((exec_path.clone(), canonical.display().to_string()));
            }
            let parent = self.images.len().checked_sub(1);
            self.images.push(SeenProcess {
                pid: self.leader,
                parent,
                exe: Some(canonical.display().to_string()),
                name: canonical
                    .file_name()
                    .map(|n| n.to_string_lossy().chars().take(15).collect())
                    .unwrap_or_default(),
                static_linked: elf.map(|e| e.static_linked),
                go: elf.map(|e| e.go),
                secure,
                env: Some(env.clone()),
            });
            self.planned.push(self.images.len() - 1);
        }
        if let Some(last) = self.images.len().checked_sub(1) {
            let link = self.images[last].exe.clone().unwrap_or_default();
            self.known.insert(self.leader, (None, link, last));
        }
    }
}

/// The watched variables of a launch's environment (its delta on top of
/// ours).
fn launch_env(launch: &Launch, names: &[String]) -> BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|name| {
            let value = launch.env_set.get(name).cloned().or_else(|| {
                (!launch.env_unset.contains(name))
                    .then(|| std::env::var(name).ok())
                    .flatten()
            })?;
            Some((name.clone(), value))
        })
        .collect()
}

/// The watched variables of a NUL-separated environment block.
fn watched_env(raw: &[u8], names: &[String]) -> BTreeMap<String, String> {
    raw.split(|&b| b == 0)
        .filter_map(|entry| {
            let eq = entry.iter().position(|&b| b == b'=')?;
            let name = std::str::from_utf8(&entry[..eq]).ok()?;
            names.iter().any(|n| n == name).then(|| {
                (
                    name.to_string(),
                    String::from_utf8_lossy(&entry[eq + 1..]).into_owned(),
                )
            })
        })
        .collect()
}

/// Finds `program` as `execvp` would: a name with a slash relative to
/// `cwd`, else the first executable file of that name in `path_var`.
pub(super) fn resolve(program: &str, path_var: &str, cwd: &Path) -> Option<PathBuf> {
    let executable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0);
    if program.contains('/') {
        let file = cwd.join(program);
        return executable(&file).then_some(file);
    }
    path_var
        .split(':')
        .map(|dir| if dir.is_empty() { "." } else { dir })
        .map(|dir| cwd.join(dir).join(program))
        .find(|p| executable(p))
}

/// The interpreter a `#!` script is run with, when `file` is one.
fn interpreter(file: &Path, path_var: &str, cwd: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = File::open(file).ok()?.read_at(&mut head, 0).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let line = std::str::from_utf8(line).ok()?;
    let program = line.split_ascii_whitespace().next()?;
    resolve(program, path_var, cwd)
}

/// Whether exec'ing `file` gains user or group ids (set-user-ID or
/// set-group-ID to someone else, on a file system that honours it, without
/// `no_new_privs`): the loader then runs in secure-execution mode.
fn gains_ids(meta: &std::fs::Metadata, file: &Path) -> bool {
    let mode = meta.mode();
    let uid = mode & 0o4000 != 0 && meta.uid() != nix::unistd::geteuid().as_raw();
    let gid = mode & 0o2000 != 0 && meta.gid() != nix::unistd::getegid().as_raw();
    if !(uid || gid) {
        return false;
    }
    let nosuid = nix::sys::statvfs::statvfs(file)
        .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_NOSUID));
    let no_new_privs = nix::sys::prctl::get_no_new_privs().unwrap_or(false);
    !nosuid && !no_new_privs
}

/// Whether a live process runs in secure-execution mode: its `AT_SECURE`,
/// else (auxv unreadable) whether its real and effective ids differ.
fn secure_of(pid: i32) -> Option<bool> {
    std::fs::read(format!("/proc/{pid}/auxv"))
        .ok()
        .and_then(|raw| auxv_secure(&raw))
        .or_else(|| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| ids_differ(&s))
        })
}

/// `AT_SECURE` from a `/proc/PID/auxv` block (native word size and order).
fn auxv_secure(raw: &[u8]) -> Option<bool> {
    const AT_NULL: u64 = 0;
    const AT_SECURE: u64 = 23;
    let word = std::mem::size_of::<usize>();
    let mut words = raw.chunks_exact(word).map(|c| {
        let mut buf = [0u8; 8];
        buf[..word].copy_from_slice(c);
        if word == 8 {
            u64::from_ne_bytes(buf)
        } else {
            u64::from(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]))
        }
    });
    while let (Some(key), Some(value)) = (words.next(), words.next()) {
        match key {
            AT_SECURE => return Some(value != 0),
            AT_NULL => return None,
            _ => {}
        }
    }
    None
}

/// From `/proc/PID/status`: whether the real and effective user or group ids
/// differ (what set-user-ID and set-group-ID programs start with).
fn ids_differ(status: &str) -> Option<bool> {
    let ids = |key: &str| -> Option<(u32, u32)> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let mut f = line[key.len()..].split_ascii_whitespace();
        Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
    };
    let (ru, eu) = ids("Uid:")?;
    let (rg, eg) = ids("Gid:")?;
    Some(ru != eu || rg != eg)
}

/// CPU time this thread has used (zero when the clock cannot be read).
fn thread_cpu_time() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

fn read_stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// The stat fields and the kernel's name of the process.
fn read_stat_named(pid: i32) -> Option<(String, ProcStat)> {
    let raw = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let open = raw.iter().position(|&b| b == b'(')?;
    let close = raw.iter().rposition(|&b| b == b')')?;
    let name = String::from_utf8_lossy(raw.get(open + 1..close)?).into_owned();
    Some((name, parse_stat(&raw)?))
}

/// The children of every thread of `pid`.
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

fn own_children() -> Vec<i32> {
    children_of(std::process::id() as i32)
}

/// What an executable's ELF headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ElfFacts {
    /// No `PT_INTERP` program header.
    pub(super) static_linked: bool,
    /// Go's build information is present.
    pub(super) go: bool,
}

/// Executables already read, by (device, inode, size, modification time):
/// each is read once per flakelab process however many runs start it.
static ELF_CACHE: Mutex<Option<HashMap<FileKey, Option<ElfFacts>>>> = Mutex::new(None);
/// A file's identity and version: device, inode, size, modification time.
type FileKey = (u64, u64, u64, i64, i64);
/// Entries kept at most (the cache is emptied when it is full).
const ELF_CACHE_MAX: usize = 4096;

fn elf_facts_cached(file: &File) -> Option<ElfFacts> {
    let meta = file.metadata().ok()?;
    let key = (
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
    );
    let mut cache = ELF_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(facts) = cache.get(&key) {
        return *facts;
    }
    let facts = elf_facts(&mut |offset, len| {
        let mut buf = vec![0u8; len];
        let n = file.read_at(&mut buf, offset).ok()?;
        buf.truncate(n);
        Some(buf)
    });
    if cache.len() >= ELF_CACHE_MAX {
        cache.clear();
    }
    cache.insert(key, facts);
    facts
}

/// Go's build information marker (`debug/buildinfo`).
const GO_BUILDINFO_MAGIC: &[u8] = b"\xff Go buildinf:";
/// How far into the first writable segment the Go marker is looked for
/// when the file has no section headers (as Go's own reader does).
const GO_SCAN: usize = 64 * 1024;

/// Reads an ELF file's headers through `read(offset, len)` (which may
/// return fewer bytes at the end of the file). None: not ELF, or cut short.
pub(super) fn elf_facts(read: &mut dyn FnMut(u64, usize) -> Option<Vec<u8>>) -> Option<ElfFacts> {
    let header = read(0, 64)?;
    if header.len() < 52 || &header[..4] != b"\x7fELF" {
        return None;
    }
    let wide = match header[4] {
        1 => false,
        2 => true,
        _ => return None,
    };
    let little = match header[5] {
        1 => true,
        2 => false,
        _ => return None,
    };
    let u16_at = |b: &[u8], at: usize| -> Option<u64> {
        let s: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
        Some(u64::from(if little {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        }))
    };
    let u32_at = |b: &[u8], at: usize| -> Option<u64> {
        let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(u64::from(if little {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        }))
    };
    let u64_at = |b: &[u8], at: usize| -> Option<u64> {
        let s: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
        Some(if little {
            u64::from_le_bytes(s)
        } else {
            u64::from_be_bytes(s)
        })
    };
    // Address-sized fields.
    let addr_at = |b: &[u8], at: usize| if wide { u64_at(b, at) } else { u32_at(b, at) };
    let (phoff, shoff) = if wide {
        (u64_at(&header, 0x20)?, u64_at(&header, 0x28)?)
    } else {
        (u32_at(&header, 0x1c)?, u32_at(&header, 0x20)?)
    };
    let base = if wide { 0x36 } else { 0x2a };
    let phentsize = u16_at(&header, base)? as usize;
    let phnum = u16_at(&header, base + 2)? as usize;
    let shentsize = u16_at(&header, base + 4)? as usize;
    let shnum = u16_at(&header, base + 6)? as usize;
    let shstrndx = u16_at(&header, base + 8)? as usize;

    let min_ph = if wide { 56 } else { 32 };
    if phentsize < min_ph || phnum == 0 {
        return None;
    }
    let table = read(phoff, phentsize * phnum)?;
    if table.len() < phentsize * phnum {
        return None;
    }
    let mut interp = false;
    let mut writable: Option<(u64, u64)> = None;
    for ph in table.chunks_exact(phentsize) {
        const PT_LOAD: u64 = 1;
        const PT_INTERP: u64 = 3;
        const PF_W: u64 = 2;
        let kind = u32_at(ph, 0)?;
        let (flags, offset, filesz) = if wide {
            (u32_at(ph, 4)?, u64_at(ph, 8)?, u64_at(ph, 32)?)
        } else {
            (u32_at(ph, 24)?, u32_at(ph, 4)?, u32_at(ph, 16)?)
        };
        if kind == PT_INTERP {
            interp = true;
        }
        if kind == PT_LOAD && flags & PF_W != 0 && writable.is_none() {
            writable = Some((offset, filesz));
        }
    }

    let min_sh = if wide { 64 } else { 40 };
    let mut go = None;
    if shnum > 0 && shentsize >= min_sh && shstrndx < shnum {
        let sections = read(shoff, shentsize * shnum)?;
        if sections.len() == shentsize * shnum {
            let (name_at, offset_at, size_at) = if wide { (0, 24, 32) } else { (0, 16, 20) };
            let strtab = &sections[shstrndx * shentsize..];
            let (str_off, str_size) = (addr_at(strtab, offset_at)?, addr_at(strtab, size_at)?);
            let names = read(str_off, usize::try_from(str_size.min(1 << 20)).ok()?)?;
            let name = |sh: &[u8]| -> Option<&[u8]> {
                let at = usize::try_from(u32_at(sh, name_at)?).ok()?;
                let rest = names.get(at..)?;
                Some(&rest[..rest.iter().position(|&b| b == 0)?])
            };
            go =
                Some(sections.chunks_exact(shentsize).any(|sh| {
                    matches!(name(sh), Some(b".go.buildinfo") | Some(b".note.go.buildid"))
                }));
        }
    }
    let go = match (go, writable) {
        (Some(true), _) => true,
        (_, Some((offset, size))) => {
            let len = usize::try_from(size).unwrap_or(GO_SCAN).min(GO_SCAN);
            read(offset, len)
                .is_some_and(|data| data.chunks(16).any(|c| c.starts_with(GO_BUILDINFO_MAGIC)))
        }
        (go, None) => go.unwrap_or(false),
    };
    Some(ElfFacts {
        static_linked: !interp,
        go,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal little-endian ELF64 file: program headers (`interp`, one
    /// writable load segment holding `data`) and, when `sections` is given,
    /// section headers with those names.
    fn elf64(interp: bool, data: &[u8], sections: Option<&[&str]>) -> Vec<u8> {
        let mut phs: Vec<(u32, u32, u64, u64)> = Vec::new();
        if interp {
            phs.push((3, 4, 0, 0));
        }
        let data_off = 64 + 56 * (phs.len() as u64 + 1);
        phs.push((1, 6, data_off, data.len() as u64));
        let mut out = vec![0u8; 64];
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = 2;
        out[5] = 1;
        out[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        out[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        out[0x38..0x3a].copy_from_slice(&(phs.len() as u16).to_le_bytes());
        for (kind, flags, offset, size) in &phs {
            let mut ph = vec![0u8; 56];
            ph[0..4].copy_from_slice(&kind.to_le_bytes());
            ph[4..8].copy_from_slice(&flags.to_le_bytes());
            ph[8..16].copy_from_slice(&offset.to_le_bytes());
            ph[32..40].copy_from_slice(&size.to_le_bytes());
            out.extend(ph);
        }
        out.extend_from_slice(data);
        if let Some(names) = sections {
            let mut strtab = vec![0u8];
            let mut at = Vec::new();
            for n in names.iter().chain([&".shstrtab"]) {
                at.push(strtab.len() as u32);
                strtab.extend_from_slice(n.as_bytes());
                strtab.push(0);
            }
            let str_off = out.len() as u64;
            out.extend(&strtab);
            let shoff = out.len() as u64;
            for (i, name) in at.iter().enumerate() {
                let mut sh = vec![0u8; 64];
                sh[0..4].copy_from_slice(&name.to_le_bytes());
                if i == at.len() - 1 {
                    sh[24..32].copy_from_slice(&str_off.to_le_bytes());
                    sh[32..40].copy_from_slice(&(strtab.len() as u64).to_le_bytes());
                }
                out.extend(sh);
            }
            out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
            out[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
            out[0x3c..0x3e].copy_from_slice(&(at.len() as u16).to_le_bytes());
            out[0x3e..0x40].copy_from_slice(&((at.len() - 1) as u16).to_le_bytes());
        }
        out
    }

    fn facts_of(bytes: &[u8]) -> Option<ElfFacts> {
        elf_facts(&mut |offset, len| {
            let start = usize::try_from(offset).ok()?.min(bytes.len());
            Some(bytes[start..(start + len).min(bytes.len())].to_vec())
        })
    }

    #[test]
    fn elf_headers_tell_static_from_dynamic_and_go_from_c() {
        let dynamic = elf64(true, b"", Some(&[".text", ".data"]));
        assert_eq!(
            facts_of(&dynamic),
            Some(ElfFacts {
                static_linked: false,
                go: false
            })
        );
        let static_go = elf64(false, b"", Some(&[".text", ".go.buildinfo"]));
        assert_eq!(
            facts_of(&static_go),
            Some(ElfFacts {
                static_linked: true,
                go: true
            })
        );
        // Without section headers, Go's marker at a 16-byte boundary of the
        // first writable segment.
        let mut data = vec![0u8; 48];
        data[32..32 + GO_BUILDINFO_MAGIC.len()].copy_from_slice(GO_BUILDINFO_MAGIC);
        assert_eq!(
            facts_of(&elf64(true, &data, None)).map(|f| f.go),
            Some(true)
        );
        let mut off = vec![0u8; 48];
        off[3..3 + GO_BUILDINFO_MAGIC.len()].copy_from_slice(GO_BUILDINFO_MAGIC);
        assert_eq!(
            facts_of(&elf64(true, &off, None)).map(|f| f.go),
            Some(false)
        );
        assert_eq!(facts_of(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(facts_of(&dynamic[..40]), None);
    }

    #[test]
    fn real_executables_read_as_they_are_built() {
        let sh = File::open("/bin/sh").unwrap();
        assert_eq!(elf_facts_cached(&sh).map(|f| f.static_linked), Some(false));
        let me = File::open(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(
            elf_facts_cached(&me),
            Some(ElfFacts {
                static_linked: false,
                go: false
            })
        );
    }

    #[test]
    fn auxv_and_status_say_secure_execution() {
        let word = |v: u64| -> Vec<u8> {
            if std::mem::size_of::<usize>() == 8 {
                v.to_ne_bytes().to_vec()
            } else {
                (v as u32).to_ne_bytes().to_vec()
            }
        };
        let block = |pairs: &[(u64, u64)]| -> Vec<u8> {
            pairs
                .iter()
                .flat_map(|(k, v)| [word(*k), word(*v)].concat())
                .collect()
        };
        assert_eq!(
            auxv_secure(&block(&[(6, 4096), (23, 1), (0, 0)])),
            Some(true)
        );
        assert_eq!(auxv_secure(&block(&[(23, 0), (0, 0)])), Some(false));
        assert_eq!(auxv_secure(&block(&[(6, 4096), (0, 0), (23, 1)])), None);
        assert_eq!(
            auxv_secure(&std::fs::read("/proc/self/auxv").unwrap()),
            Some(false)
        );
        let status = "Name:\tx\nUid:\t0\t65534\t65534\t65534\nGid:\t0\t0\t0\t0\n";
        assert_eq!(ids_differ(status), Some(true));
        assert_eq!(
            ids_differ("Uid:\t5\t5\t5\t5\nGid:\t7\t7\t7\t7\n"),
            Some(false)
        );
        assert_eq!(ids_differ("Name:\tx\n"), None);
    }

    #[test]
    fn watched_variables_are_read_from_an_environment_block() {
        let names = vec!["LD_PRELOAD".to_string(), "FAKETIME".to_string()];
        let env = watched_env(
            b"A=1\0LD_PRELOAD=/l.so\0FAKETIME=+1d\0XFAKETIME=no\0",
            &names,
        );
        assert_eq!(
            env,
            BTreeMap::from([
                ("FAKETIME".to_string(), "+1d".to_string()),
                ("LD_PRELOAD".to_string(), "/l.so".to_string())
            ])
        );
        assert!(watched_env(b"A=1\0", &names).is_empty());
    }

    #[test]
    fn programs_resolve_like_execvp_and_scripts_to_their_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let found = resolve("./run.sh", "", dir.path()).unwrap();
        assert_eq!(found, dir.path().join("./run.sh"));
        assert_eq!(
            interpreter(&found, "/usr/bin:/bin", dir.path()),
            Some(PathBuf::from("/bin/sh"))
        );
        let sh = resolve("sh", "/nonexistent:/usr/bin:/bin", dir.path()).unwrap();
        assert!(sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(
            resolve("flakelab-no-such-program", "/usr/bin", dir.path()),
            None
        );
        assert_eq!(interpreter(&sh, "/usr/bin", dir.path()), None);
    }

    #[test]
    fn the_preload_is_told_each_dynamic_program_by_the_path_its_exec_names() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let launch = |argv0: &str| Launch {
            argv: vec![argv0.into()],
            cwd: dir.path().to_path_buf(),
            env_set: [("PATH".to_string(), "/nonexistent:/usr/bin:/bin".to_string())].into(),
            env_unset: Vec::new(),
            isolation: Default::default(),
            netns_cell: None,
            preload_cleanup: None,
            clock_record: true,
        };
        let told = |execs: &[&str], argv0: &str| {
            let watch = Watch {
                env: Vec::new(),
                execs: execs.iter().map(|e| e.to_string()).collect(),
            };
            Inspector::plan_for(&watch, &launch(argv0), "m").exes_for_preload()
        };
        let canonical = |p: &str| std::fs::canonicalize(p).unwrap().display().to_string();
        // Found on the PATH: the path execvp execs, the file it runs.
        assert_eq!(
            told(&["true"], "true"),
            format!("/usr/bin/true\t{}\n", canonical("/usr/bin/true"))
        );
        // A script: the path the kernel is given, its interpreter's file.
        let path = script.display().to_string();
        assert_eq!(
            told(&[&path], &path),
            format!("{path}\t{}\n", canonical("/bin/sh"))
        );
        // A relative path names another file in another directory: not told.
        assert_eq!(told(&["./run.sh"], "./run.sh"), "");
    }
}
