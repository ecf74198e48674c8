//! libFuzzer entry point: see [`flakelab_fuzz::archive`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flakelab_fuzz::archive(data));
