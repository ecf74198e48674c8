//! libFuzzer entry point: see [`flakelab_fuzz::signature`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flakelab_fuzz::signature(data));
