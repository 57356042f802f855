//! A whole seed corpus: every capture's conversations plus the synthetic
//! seeds, deduplicated per target, and written as cargo-fuzz expects it
//! (`<dir>/<target>/<file>`).

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::capture::read_conversations;
use super::conversation::MpaConversation;
use super::engine::engine_seeds;
use super::seeds::{conversation_seeds, Seed};
use super::synthetic::synthetic_seeds;
use super::targets::Target;

/// Every iWARP conversation in the `.pcap`/`.pcapng` files of `dir`,
/// labelled `<file stem>-<connection number>`, in file-name order.
pub fn capture_conversations(dir: &Path) -> io::Result<Vec<MpaConversation>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tcp = read_conversations(&path)
            .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
        out.extend(
            tcp.iter()
                .filter_map(|c| MpaConversation::from_tcp(format!("{stem}-{}", c.number), c)),
        );
    }
    Ok(out)
}

/// Seeds per target, in a stable order, with duplicate contents removed.
#[derive(Debug, Default, Clone)]
pub struct Corpus {
    pub seeds: BTreeMap<Target, Vec<Seed>>,
}

impl Corpus {
    /// Adds a seed unless its target already has the same bytes.
    pub fn add(&mut self, seed: Seed) -> bool {
        let list = self.seeds.entry(seed.target).or_default();
        if list.iter().any(|s| s.data == seed.data) {
            return false;
        }
        list.push(seed);
        true
    }

    pub fn extend(&mut self, seeds: impl IntoIterator<Item = Seed>) {
        for s in seeds {
            self.add(s);
        }
    }

    /// The synthetic seeds alone, for all eight targets.
    pub fn synthetic() -> Corpus {
        let mut c = Corpus::default();
        c.extend(engine_seeds());
        c.extend(synthetic_seeds());
        c
    }

    /// The synthetic seeds plus those of every conversation in `captures`.
    pub fn with_captures(captures: &[MpaConversation]) -> Corpus {
        let mut c = Corpus::synthetic();
        for conv in captures {
            c.extend(conversation_seeds(conv));
        }
        c
    }

    pub fn get(&self, target: Target) -> &[Seed] {
        self.seeds.get(&target).map_or(&[], Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.seeds.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes `<dir>/<target>/<seed name>` for every seed and returns how
    /// many files were written per target. Existing files (a fuzzer's own
    /// findings) are left alone; a name already used by different bytes
    /// gets a numbered suffix.
    pub fn write(&self, dir: &Path) -> io::Result<BTreeMap<Target, usize>> {
        let mut written = BTreeMap::new();
        for (target, seeds) in &self.seeds {
            let sub = dir.join(target.name());
            fs::create_dir_all(&sub)?;
            let mut used = HashSet::new();
            let mut n = 0;
            for seed in seeds {
                let base = file_name(&seed.name);
                let mut name = base.clone();
                let mut k = 1;
                while !used.insert(name.clone()) {
                    k += 1;
                    name = format!("{base}-{k}");
                }
                fs::write(sub.join(&name), &seed.data)?;
                n += 1;
            }
            written.insert(*target, n);
        }
        Ok(written)
    }
}

/// `name` with anything but `[A-Za-z0-9._-]` replaced, prefixed so the
/// files are recognisable among a fuzzer's hash-named ones.
fn file_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("seed-{clean}")
}
