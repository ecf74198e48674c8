//! libFuzzer entry point: see [`flakelab_fuzz::catalog`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flakelab_fuzz::catalog(data));
