fn main() {
    eprintln!("iwarp: no commands yet");
    std::process::exit(2);
}
