/*
 * flakelab's clock preload: the wall clock reads another instant, and
 * nothing else changes.
 *
 * Loaded with LD_PRELOAD into the processes of a clock cell's runs. It
 * shifts only what reads the wall clock (clock_gettime for CLOCK_REALTIME,
 * CLOCK_REALTIME_COARSE and CLOCK_TAI, gettimeofday, time, timespec_get,
 * ftime); every other clock id goes to the C library's own function, and
 * no sleep, timed wait or monotonic clock is touched, so a timeout means
 * what it means at the baseline. No shared memory, no file of its own.
 *
 * Settings, from variables flakelab sets for the run (read once, in the
 * constructor; never written):
 *   FLAKELAB_CLOCK         "+S" / "-S": shift by S seconds ("+0": the sham);
 *                          "@E": the clock reads E (epoch seconds) when the
 *                          real clock reads the anchor, and runs from there.
 *   FLAKELAB_CLOCK_ANCHOR  the real time (epoch nanoseconds) the run started:
 *                          every process of a run agrees on the instant.
 *                          Without it, an "@E" clock starts at the process's
 *                          own start.
 *   FLAKELAB_CLOCK_RECORD  a file flakelab created for the run: each process
 *                          appends "A pid ppid exe" when the preload loads
 *                          in it (with "off" before the exe when it does
 *                          not shift: no setting it can read), and
 *                          "X pid ppid static|go path" before it
 *                          executes a program the preload cannot reach (a
 *                          static or Go binary). Opened without O_CREAT: the
 *                          preload never creates a file.
 *   FLAKELAB_CLOCK_EXES    optional: lines "path<TAB>exe", the programs
 *                          flakelab resolved before the spawn (the path an
 *                          exec names, the canonical executable it runs). A
 *                          process whose AT_EXECFN is one of those paths
 *                          announces that exe without reading
 *                          /proc/self/exe, its costliest system call.
 *
 * No malloc anywhere: the exec wrappers may run in a vfork child.
 * Built by flakelab's build.rs with the machine's C compiler
 * (-shared -fPIC -O2, libc only).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- settings ---------------------------------------------------------- */

/* The offset added to the real wall clock, in nanoseconds. An absolute
 * start is an offset too: at - anchor. */
static int64_t offset_ns;
static int enabled;

/* "+S" / "-S" / "@E" digits to an integer; 0 on success. */
static int parse_i64(const char *s, int64_t *out) {
    int64_t v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
static clock_gettime_fn real_clock_gettime;

static clock_gettime_fn real_cg(void) {
    /* Resolved once; a race resolves the same pointer twice. */
    clock_gettime_fn f = __atomic_load_n(&real_clock_gettime, __ATOMIC_RELAXED);
    if (!f) {
        f = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&real_clock_gettime, f, __ATOMIC_RELAXED);
    }
    return f;
}

static int64_t real_now_ns(void) {
    struct timespec ts;
    if (real_cg()(CLOCK_REALTIME, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the record -------------------------------------------------------- */

/* Appends one line to the run's record (one write: O_APPEND keeps lines
 * of concurrent processes whole). Errors are ignored: the run is then
 * judged without this process's line. errno is preserved. */
static void record(const char *line, size_t len) {
    const char *path = getenv("FLAKELAB_CLOCK_RECORD");
    if (!path || !*path) return;
    int saved = errno;
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        ssize_t n = write(fd, line, len);
        (void)n;
        close(fd);
    }
    errno = saved;
}

/* Appends the decimal of v at p; returns the new end. */
static char *put_num(char *p, long v) {
    char tmp[24];
    int i = 0;
    unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;
    do { tmp[i++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) *p++ = '-';
    while (i) *p++ = tmp[--i];
    return p;
}

/* Appends s (newlines replaced, cut at the buffer's end); returns the end. */
static char *put_str(char *p, char *end, const char *s) {
    for (; *s && p < end; s++) *p++ = (*s == '\n') ? '?' : *s;
    return p;
}

static void record_line(char kind, const char *what, const char *path) {
    char line[PATH_MAX + 96];
    char *p = line, *end = line + sizeof line - 1;
    long ppid = (long)getppid();
    *p++ = kind;
    *p++ = ' ';
    p = put_num(p, (long)getpid());
    *p++ = ' ';
    p = put_num(p, ppid);
    *p++ = ' ';
    if (what) { p = put_str(p, end, what); *p++ = ' '; }
    p = put_str(p, end, path);
    *p++ = '\n';
    record(line, (size_t)(p - line));
}

/* The executable flakelab resolved for `execfn` (the path this process was
 * exec'd by) in FLAKELAB_CLOCK_EXES, copied to exe (NUL-terminated); its
 * length, or 0 when the path is not listed (or its exe does not fit). The
 * path must match whole: an absolute path flakelab resolved names one file
 * whatever the process's directory. No system call. */
static ssize_t known_exe(const char *execfn, char *exe, size_t size) {
    const char *list = getenv("FLAKELAB_CLOCK_EXES");
    if (!list || !execfn || execfn[0] != '/') return 0;
    size_t len = strlen(execfn);
    for (const char *line = list; *line;) {
        const char *tab = strchr(line, '\t');
        const char *eol = strchr(line, '\n');
        if (!eol) eol = line + strlen(line);
        if (tab && tab < eol && (size_t)(tab - line) == len &&
            memcmp(line, execfn, len) == 0) {
            size_t n = (size_t)(eol - tab - 1);
            if (n == 0 || n >= size) return 0;
            memcpy(exe, tab + 1, n);
            return (ssize_t)n;
        }
        line = *eol ? eol + 1 : eol;
    }
    return 0;
}

__attribute__((constructor)) static void flakelab_clock_init(void) {
    const char *spec = getenv("FLAKELAB_CLOCK");
    if (spec) {
        int64_t v;
        if ((spec[0] == '+' || spec[0] == '-') && parse_i64(spec + 1, &v) == 0 &&
            v < INT64_MAX / 1000000000) {
            offset_ns = (spec[0] == '-' ? -v : v) * 1000000000;
            enabled = 1;
        } else if (spec[0] == '@' && parse_i64(spec + 1, &v) == 0 &&
                   v < INT64_MAX / 1000000000) {
            int64_t anchor;
            const char *a = getenv("FLAKELAB_CLOCK_ANCHOR");
            if (!a || parse_i64(a, &anchor) != 0) anchor = real_now_ns();
            offset_ns = v * 1000000000 - anchor;
            enabled = 1;
        }
    }
    /* The announcement: this process loaded the preload (and with which
     * setting: an unparsable one is announced as not shifting). Nothing
     * more is read at start-up: every system call here is paid by every
     * process of the run. */
    const char *record_path = getenv("FLAKELAB_CLOCK_RECORD");
    if (!record_path || !*record_path) return;
    char exe[PATH_MAX];
    ssize_t n = known_exe((const char *)getauxval(AT_EXECFN), exe, sizeof exe);
    if (n <= 0) n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    record_line('A', enabled ? NULL : "off", n > 0 ? exe : "?");
}

/* ---- the wall clock ----------------------------------------------------- */

static int shifts(clockid_t id) {
    return enabled && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI);
}

static void shift(struct timespec *ts) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + offset_ns;
    int64_t s = ns / 1000000000, r = ns % 1000000000;
    if (r < 0) { r += 1000000000; s -= 1; }
    ts->tv_sec = (time_t)s;
    ts->tv_nsec = (long)r;
}

EXPORT int clock_gettime(clockid_t id, struct timespec *ts) {
    int rc = real_cg()(id, ts);
    if (rc == 0 && shifts(id)) shift(ts);
    return rc;
}

#if defined(__USE_TIME64_REDIRECTS) || (__TIMESIZE == 32)
/* 32-bit C libraries with 64-bit time: the same, under its other name. */
struct flakelab_ts64 { int64_t tv_sec; int64_t tv_nsec; };
EXPORT int __clock_gettime64(clockid_t id, struct flakelab_ts64 *ts) {
    static int (*real)(clockid_t, struct flakelab_ts64 *);
    if (!real) real = dlsym(RTLD_NEXT, "__clock_gettime64");
    int rc = real(id, ts);
    if (rc == 0 && ts && shifts(id)) {
        int64_t ns = ts->tv_sec * 1000000000 + ts->tv_nsec + offset_ns;
        ts->tv_sec = ns / 1000000000;
        ts->tv_nsec = ns % 1000000000;
        if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000; ts->tv_sec -= 1; }
    }
    return rc;
}
#endif

EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    if (tz) memset(tz, 0, 2 * sizeof(int)); /* struct timezone: obsolete, zeros */
    return rc;
}

EXPORT time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}

EXPORT int timespec_get(struct timespec *ts, int base) {
    if (base != TIME_UTC) return 0;
    return clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

/* struct timeb, without the deprecated header. */
struct flakelab_timeb { time_t time; unsigned short millitm; short timezone, dstflag; };
EXPORT int ftime(struct flakelab_timeb *tb) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    tb->time = ts.tv_sec;
    tb->millitm = (unsigned short)(ts.tv_nsec / 1000000);
    tb->timezone = 0;
    tb->dstflag = 0;
    return 0;
}

/* ---- programs the preload cannot reach ---------------------------------- */

/* What an executable is to the preload: 0 reached (dynamically linked, not
 * Go, or not an ELF file), else "static" or "go". Reads the ELF program
 * headers (PT_INTERP: dynamically linked; a PT_NOTE holding the "Go" build
 * id note: Go) and, for a Go binary without that note, the section names
 * (.go.buildinfo). 64-bit ELF only. A "#!" script is judged by its
 * interpreter, one level deep. */
static const char *classify_fd(int fd, int depth);

static const char *classify_path(const char *path, int depth) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    const char *what = classify_fd(fd, depth);
    close(fd);
    return what;
}

static int read_at(int fd, void *buf, size_t len, off_t at) {
    return pread(fd, buf, len, at) == (ssize_t)len ? 0 : -1;
}

static const char *classify_fd(int fd, int depth) {
    Elf64_Ehdr eh;
    unsigned char head[PATH_MAX];
    ssize_t got = pread(fd, head, sizeof head - 1, 0);
    if (got >= 2 && head[0] == '#' && head[1] == '!' && depth == 0) {
        head[got] = '\0';
        char *p = (char *)head + 2;
        while (*p == ' ' || *p == '\t') p++;
        char *e = p;
        while (*e && *e != ' ' && *e != '\t' && *e != '\n') e++;
        *e = '\0';
        return *p ? classify_path(p, 1) : NULL;
    }
    if (got < (ssize_t)sizeof eh || memcmp(head, ELFMAG, SELFMAG) != 0 ||
        head[EI_CLASS] != ELFCLASS64)
        return NULL;
    memcpy(&eh, head, sizeof eh);
    if (eh.e_phentsize != sizeof(Elf64_Phdr)) return NULL;
    int interp = 0, go = 0;
    for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
        Elf64_Phdr ph;
        if (read_at(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph))) return NULL;
        if (ph.p_type == PT_INTERP) interp = 1;
        if (ph.p_type == PT_NOTE && ph.p_filesz <= 4096) {
            unsigned char note[4096];
            if (read_at(fd, note, ph.p_filesz, (off_t)ph.p_offset)) continue;
            for (size_t at = 0; at + 12 <= ph.p_filesz;) {
                Elf64_Nhdr nh;
                memcpy(&nh, note + at, 12);
                size_t name = at + 12, desc = name + ((nh.n_namesz + 3) & ~3u);
                if (nh.n_namesz == 4 && name + 4 <= ph.p_filesz &&
                    memcmp(note + name, "Go\0\0", 4) == 0)
                    go = 1;
                at = desc + ((nh.n_descsz + 3) & ~3u);
            }
        }
    }
    if (!go && eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shstrndx < eh.e_shnum &&
        eh.e_shnum < 4096) {
        Elf64_Shdr names;
        if (!read_at(fd, &names, sizeof names,
                     (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof names))) {
            for (unsigned i = 0; i < eh.e_shnum && !go; i++) {
                Elf64_Shdr sh;
                char name[16];
                if (read_at(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + i * sizeof sh))) break;
                if (sh.sh_name >= names.sh_size) continue;
                if (read_at(fd, name, sizeof name, (off_t)(names.sh_offset + sh.sh_name)))
                    continue;
                go = memcmp(name, ".go.buildinfo", 14) == 0;
            }
        }
    }
    if (go) return "go";
    return interp ? NULL : "static";
}

/* Records `path` if the preload cannot reach it. `path` has a slash or is
 * looked up in PATH (`search`), as execvp does. */
static void check_exec(const char *path, int search) {
    if (!path || !*path) return;
    int saved = errno;
    const char *what = NULL;
    char full[PATH_MAX];
    const char *found = path;
    if (search && !strchr(path, '/')) {
        const char *dirs = getenv("PATH");
        if (!dirs) dirs = "/bin:/usr/bin";
        found = NULL;
        while (*dirs && !found) {
            const char *colon = strchr(dirs, ':');
            size_t len = colon ? (size_t)(colon - dirs) : strlen(dirs);
            if (len + strlen(path) + 2 < sizeof full) {
                memcpy(full, len ? dirs : ".", len ? len : 1);
                size_t at = len ? len : 1;
                full[at] = '/';
                strcpy(full + at + 1, path);
                if (access(full, X_OK) == 0) found = full;
            }
            dirs = colon ? colon + 1 : dirs + len;
        }
    }
    if (found) what = classify_path(found, 0);
    /* Named by its absolute path when it resolves (realpath with a buffer
     * does not allocate). */
    char abs[PATH_MAX];
    if (what) record_line('X', what, realpath(found, abs) ? abs : found);
    errno = saved;
}

/* The exec family and posix_spawn: each looks at the program, then calls
 * the C library's own function. glibc's execl* and execvp call its internal
 * execve, out of a preload's reach, so each is wrapped itself. */
#define REAL(name, type) \
    static type real_##name; \
    if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    REAL(execve, execve_fn);
    check_exec(path, 0);
    return real_execve(path, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[]) {
    REAL(execv, execv_fn);
    check_exec(path, 0);
    return real_execv(path, argv);
}

EXPORT int execvp(const char *file, char *const argv[]) {
    REAL(execvp, execv_fn);
    check_exec(file, 1);
    return real_execvp(file, argv);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    REAL(execvpe, execve_fn);
    check_exec(file, 1);
    return real_execvpe(file, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    typedef int (*fexecve_fn)(int, char *const[], char *const[]);
    REAL(fexecve, fexecve_fn);
    int saved = errno;
    const char *what = classify_fd(fd, 0);
    if (what) record_line('X', what, "(fexecve)");
    errno = saved;
    return real_fexecve(fd, argv, envp);
}

/* execl, execlp, execle: the variadic arguments, gathered on the stack. */
#define MAX_ARGS 1024
/* Reads the NULL-terminated list after `first` into args; with `envp`,
 * the pointer after the NULL too. */
static int gather(const char *first, va_list ap, char **args, char ***envp) {
    size_t n = 0;
    args[n++] = (char *)first;
    while (args[n - 1] && n < MAX_ARGS) args[n++] = va_arg(ap, char *);
    if (args[n - 1]) { errno = E2BIG; return -1; }
    if (envp) *envp = va_arg(ap, char **);
    return 0;
}
#define GATHER(first, args, envp_out)                 \
    char *args[MAX_ARGS + 1];                         \
    do {                                              \
        va_list ap;                                   \
        va_start(ap, first);                          \
        int bad = gather(first, ap, args, envp_out);  \
        va_end(ap);                                   \
        if (bad) return -1;                           \
    } while (0)

EXPORT int execl(const char *path, const char *arg, ...) {
    GATHER(arg, args, NULL);
    return execv(path, args);
}

EXPORT int execlp(const char *file, const char *arg, ...) {
    GATHER(arg, args, NULL);
    return execvp(file, args);
}

EXPORT int execle(const char *path, const char *arg, ...) {
    char **envp = NULL;
    GATHER(arg, args, &envp);
    return execve(path, args, envp);
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    REAL(posix_spawn, spawn_fn);
    check_exec(path, 0);
    return real_posix_spawn(pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    REAL(posix_spawnp, spawn_fn);
    check_exec(file, 1);
    return real_posix_spawnp(pid, file, fa, attr, argv, envp);
}
