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
    let mut cmd: Command = compiler.to_command();
    // Only the C library: dlsym is in libc from glibc 2.34 on; libdl is
    // linked only where it still holds dlsym (--as-needed drops it).
    cmd.args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o"])
        .arg(&lib)
        .arg(src)
        .args(["-Wl,--as-needed", "-ldl"]);
    let status = cmd.status().unwrap_or_else(|e| {
        panic!(
            "flakelab's clock preload needs a C compiler; running {:?} failed: {e}",
            compiler.path()
        )
    });
    assert!(
        status.success(),
        "compiling flakelab's clock preload ({src}) failed: {status}"
    );
}
