#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rdmap::fuzzing::rfc7306(data));
