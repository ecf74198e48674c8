//! libFuzzer entry point: see [`flakelab_fuzz::junit`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flakelab_fuzz::junit(data));
