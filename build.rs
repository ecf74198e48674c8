//! Builds flakelab's clock preload (`preload/clock.c`) into a shared
//! library that `src/perturb/clock.rs` embeds: the clock cell needs nothing
//! installed. The C compiler is the one the `cc` crate finds (the one the
//! tree-sitter grammars are compiled with); without one the build stops
//! with a message saying so.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "preload/clock.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let lib = out.join("flakelab-clock.so");
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .opt_level(2)
        .try_get_compiler()
        .unwrap_or_else(|e| {
            panic!("flakelab's clock preload needs a C compiler (cc, gcc or clang; set CC to choose one): {e}")
        });
    // Loaded into every process of a clock cell's runs, so it is built to
    // load cheaply: two segments instead of four (`-z noseparate-code`:
    // two `mmap` calls fewer per process) and no C start files (nothing of
    // theirs runs: the constructor is in `.init_array`, which the dynamic
    // loader runs itself, and their weak symbols are not looked up at every
    // load). RELRO is kept. A linker that refuses these gets the plain build.
    let lean = ["-nostartfiles", "-Wl,-z,noseparate-code"];
    if !build(&compiler, &lib, src, &lean) {
        println!(
            "cargo:warning=the linker refused {lean:?}; flakelab's clock preload is built without them (it loads a little slower)"
        );
        assert!(
            build(&compiler, &lib, src, &[]),
            "compiling flakelab's clock preload ({src}) failed"
        );
    }
}

/// Compiles `src` into the shared library `lib` with `extra` flags; whether
/// it succeeded.
fn build(compiler: &cc::Tool, lib: &std::path::Path, src: &str, extra: &[&str]) -> bool {
    let mut cmd: Command = compiler.to_command();
    // Only the C library: dlsym is in libc from glibc 2.34 on; libdl is
    // linked only where it still holds dlsym (--as-needed drops it).
    cmd.args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra"])
        .args(extra)
        .arg("-o")
        .arg(lib)
        .arg(src)
        .args(["-Wl,--as-needed", "-ldl"]);
    let status = cmd.status().unwrap_or_else(|e| {
        panic!(
            "flakelab's clock preload needs a C compiler; running {:?} failed: {e}",
            compiler.path()
        )
    });
    status.success()
}
