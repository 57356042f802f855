#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mpa::fuzzing::deframer(data));
