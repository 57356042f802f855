//! The link model a command line describes: a named profile, the settings
//! that override it, and loss on top. `iwarp link` and `iwarp bench`
//! compose their wires here, so one flag means the same on both.

use std::time::Duration;

use transport::link_model::{GilbertElliott, LinkModelConfig, Profile, Reorder};

use super::units;

/// `lan`, `wan` or `lossy-wan`.
pub(crate) fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::from_name(s).ok_or_else(|| {
        let names: Vec<_> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile {s:?}; one of {}", names.join(", "))
    })
}

/// The path flags `iwarp link` and `iwarp bench` share, so each means the
/// same on both.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct PathArgs {
    /// Named path: lan (1 ms RTT, 1 Gbit/s, 125 KB queue), wan (20 ms,
    /// 1 Gbit/s, 2.5 MB), lossy-wan (40 ms, 100 Mbit/s, 500 KB). --rtt,
    /// --rate and --queue change it; --loss adds random loss on top.
    #[arg(long, value_parser = parse_profile)]
    pub profile: Option<Profile>,
    /// Round-trip time, split evenly over both directions (e.g. 20ms).
    #[arg(long, value_parser = units::duration)]
    pub rtt: Option<Duration>,
    /// Bottleneck rate in each direction (e.g. 1gbit, 100mbit).
    #[arg(long, value_parser = units::rate)]
    pub rate: Option<u64>,
    /// Drop-tail queue in front of the rate, in bytes (e.g. 125kb, 2.5mb).
    #[arg(long, value_parser = units::size)]
    pub queue: Option<usize>,
    /// Mean length of a loss burst in frames: --loss then comes in bursts
    /// (Gilbert-Elliott) instead of independently.
    #[arg(long)]
    pub burst: Option<f64>,
}

impl PathArgs {
    /// The flags with `loss` (a share of frames), `jitter` and `reorder`
    /// on top.
    pub(crate) fn flags(
        &self,
        loss: f64,
        jitter: Option<Duration>,
        reorder: Option<Reorder>,
    ) -> ModelFlags {
        ModelFlags {
            profile: self.profile,
            rtt: self.rtt,
            rate_bps: self.rate,
            queue_bytes: self.queue,
            jitter,
            loss,
            burst: self.burst,
            reorder,
        }
    }
}

/// What the flags say about the wire; unset fields keep the profile's
/// setting (or a perfect wire's, without a profile).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ModelFlags {
    pub profile: Option<Profile>,
    /// Round-trip time, split evenly over both directions.
    pub rtt: Option<Duration>,
    pub rate_bps: Option<u64>,
    pub queue_bytes: Option<usize>,
    pub jitter: Option<Duration>,
    /// Share of frames lost in each direction, on top of the profile.
    pub loss: f64,
    /// Mean burst length in frames: `loss` then comes in bursts
    /// (Gilbert model) instead of independently.
    pub burst: Option<f64>,
    pub reorder: Option<Reorder>,
}

impl ModelFlags {
    /// Whether any flag asks for a modelled wire.
    pub(crate) fn any(&self) -> bool {
        self.profile.is_some()
            || self.rtt.is_some()
            || self.rate_bps.is_some()
            || self.queue_bytes.is_some()
            || self.burst.is_some()
    }

    /// The model of one direction.
    pub(crate) fn model(&self) -> Result<LinkModelConfig, String> {
        let mut m = self.profile.map(Profile::config).unwrap_or_default();
        if let Some(rtt) = self.rtt {
            m.delay = rtt / 2;
        }
        if let Some(r) = self.rate_bps {
            m.rate_bps = Some(r);
        }
        if let Some(q) = self.queue_bytes {
            m.queue_bytes = Some(q);
        }
        if let Some(j) = self.jitter {
            m.jitter = j;
        }
        m.loss = self.loss;
        if let Some(burst) = self.burst {
            m.burst = Some(GilbertElliott::with_rate_and_burst(self.loss, burst).ok_or(
                "--burst needs a --loss between 0 and 1 and a burst of at least 1 frame \
                     (and a loss no higher than a burst allows)",
            )?);
            m.loss = 0.0;
        }
        m.reorder = self.reorder;
        m.validate().map_err(|e| e.to_string())?;
        Ok(m)
    }
}

/// One line describing `m`.
pub(crate) fn describe(m: &LinkModelConfig) -> String {
    let mut s = format!("RTT {:?}", m.delay * 2);
    match m.rate_bps {
        Some(r) => s += &format!(", rate {:.3} Gbit/s", r as f64 / 1e9),
        None => s += ", no rate limit",
    }
    if let Some(q) = m.queue_bytes {
        s += &format!(", queue {q} B");
    }
    if m.loss > 0.0 {
        s += &format!(", loss {:.3}%", m.loss * 100.0);
    }
    if let Some(g) = m.burst {
        s += &format!(
            ", bursty loss {:.3}% in runs of {:.1}",
            g.stationary_loss() * 100.0,
            1.0 / g.bad_to_good
        );
    }
    if !m.jitter.is_zero() {
        s += &format!(", jitter {:?}", m.jitter);
    }
    if let Some(r) = m.reorder {
        s += &format!(", reorder {:.3}% by {:?}", r.probability * 100.0, r.hold);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_with_overrides_and_loss_on_top() {
        let flags = ModelFlags {
            profile: Some(Profile::Wan),
            ..ModelFlags::default()
        };
        assert!(flags.any());
        assert_eq!(flags.model().unwrap(), Profile::Wan.config());
        let m = ModelFlags {
            profile: Some(Profile::Lan),
            rtt: Some(Duration::from_millis(4)),
            loss: 0.01,
            ..ModelFlags::default()
        }
        .model()
        .unwrap();
        assert_eq!(m.delay, Duration::from_millis(2));
        assert_eq!(m.rate_bps, Some(1_000_000_000));
        assert_eq!(m.queue_bytes, Some(125_000), "the profile's queue stays");
        assert_eq!(m.loss, 0.01);
        assert!(describe(&m).contains("loss 1.000%"), "{}", describe(&m));
        assert!(!ModelFlags::default().any());
        assert!(ModelFlags::default().model().unwrap().is_clean());
    }

    #[test]
    fn a_burst_turns_the_loss_into_runs() {
        let m = ModelFlags {
            loss: 0.02,
            burst: Some(4.0),
            ..ModelFlags::default()
        }
        .model()
        .unwrap();
        assert_eq!(m.loss, 0.0);
        assert!((m.burst.unwrap().stationary_loss() - 0.02).abs() < 1e-12);
        let no_loss = ModelFlags {
            burst: Some(4.0),
            ..ModelFlags::default()
        };
        assert!(no_loss.model().is_err(), "a burst needs a loss");
    }

    #[test]
    fn profile_names() {
        assert_eq!(parse_profile("lossy-wan"), Ok(Profile::LossyWan));
        assert!(parse_profile("moon")
            .unwrap_err()
            .contains("lan, wan, lossy-wan"));
    }
}
