//! Tracing behind the `tracing` feature (docs/diagnostics.md): spans per
//! queue pair and connection, events for state changes, MPA start-up
//! steps and TERMINATEs.
//!
//! Without the feature the macros expand to nothing and [`Span`] is a
//! unit struct whose methods do nothing, so the data path keeps no call,
//! no branch and no field for tracing: the arguments of an event are not
//! even evaluated. The macros are in scope crate-wide (`#[macro_use]`).

#[cfg(feature = "tracing")]
pub(crate) use tracing::Span;

/// Stands in for `tracing::Span` without the feature.
#[cfg(not(feature = "tracing"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct Span;

/// Stands in for the guard of an entered span without the feature.
#[cfg(not(feature = "tracing"))]
#[derive(Debug)]
pub(crate) struct Entered;

#[cfg(not(feature = "tracing"))]
impl Span {
    #[inline(always)]
    pub(crate) fn enter(&self) -> Entered {
        Entered
    }
}

/// `tracing::event!` with the feature; nothing without it.
#[cfg(feature = "tracing")]
macro_rules! trace_event {
    ($($t:tt)*) => { ::tracing::event!($($t)*) };
}

#[cfg(not(feature = "tracing"))]
macro_rules! trace_event {
    ($($t:tt)*) => {};
}

/// `tracing::debug_span!` with the feature; a [`Span`] that does nothing
/// without it.
#[cfg(feature = "tracing")]
macro_rules! trace_span {
    ($($t:tt)*) => { ::tracing::debug_span!($($t)*) };
}

#[cfg(not(feature = "tracing"))]
macro_rules! trace_span {
    ($($t:tt)*) => {
        $crate::trace::Span
    };
}
