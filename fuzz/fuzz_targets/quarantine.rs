//! libFuzzer entry point: see [`flakelab_fuzz::quarantine`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flakelab_fuzz::quarantine(data));
