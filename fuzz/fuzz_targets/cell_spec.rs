//! libFuzzer entry point: see [`flakelab_fuzz::cell_spec`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flakelab_fuzz::cell_spec(data));
